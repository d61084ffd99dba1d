"""How fast the command line answers, end to end, and what a long text costs to add.

    python scripts/bench_cli.py [--runs 10] [--json out.json]

Each CLI figure is the median wall time of `--runs` runs of a fresh `hippocampus` process (what a
person or a cron line waits for: interpreter start, imports, opening the store, loading the
embedder): `--help`, an `add`, a `search` and a `list` on a small store (50 memories, offline defaults), and
the same search through a running service (`--server`, which loads neither the store client nor the embedder),
and `search` and `list` with `--uri` while that service holds the store (they find it by its record and go through it).
Then `Memory.add` in-process for texts of 1, 10 and 60 thousand characters (median of 3), which a
long text's bounded embedding keeps flat. Prints a table; `--json` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _median(fn, runs: int) -> float:
    return statistics.median(fn() for _ in range(runs))


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--cli-only", action="store_true", help="only the command-line rows (not the in-process adds)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from hippocampus import Memory

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        env = {**os.environ, "HIPPOCAMPUS_HOME": tmp, "PYTHONPATH": str(ROOT)}
        with Memory(milvus_uri=db) as memory:
            memory.add_many([{"text": f"Note {i}: I went to the market on day {i} and bought apples", "user_id": "bench"}
                             for i in range(50)])
        out["--help"] = _median(lambda: _cli("--help", env=env, row="--help"), args.runs)
        out["add"] = _median(lambda: _cli("--uri", db, "add", "I moved to Lisbon in March", "-u", "bench", env=env, row="add"), args.runs)
        out["search"] = _median(lambda: _cli("--uri", db, "search", "where do I live?", "-u", "bench", env=env, row="search"), args.runs)
        out["list"] = _median(lambda: _cli("--uri", db, "list", "-u", "bench", env=env, row="list"), args.runs)
        url = _serve(db, env)
        try:
            row = "search --server (service up)"
            out[row] = _median(lambda: _cli("--server", url, "search", "where do I live?", "-u", "bench", env=env, row=row), args.runs)
            # no --server: the command finds the service that holds the store by its record (cli/service.py)
            for verb, extra in (("search", ["where do I live?"]), ("list", [])):
                row = f"{verb}, service found by its record"
                out[row] = _median(lambda: _cli("--uri", db, verb, *extra, "-u", "bench", env=env, row=row), args.runs)  # noqa: B023
        finally:
            _SERVICE[0].terminate()
            _SERVICE[0].wait(timeout=60)
        if args.cli_only:
            return _table(out, args)
        with Memory(milvus_uri=str(Path(tmp) / "long.db")) as memory:
            memory.add("warm up", user_id="bench")
            for chars in (1_000, 10_000, 60_000):
                text = ("I walked along the river and watched the boats go by. " * (chars // 50 + 1))[:chars]
                out[f"add {chars // 1000}k chars (in-process)"] = _median(lambda: _timed(memory, text), 3)
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
