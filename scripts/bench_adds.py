"""One add at a time (`Memory.add(text, infer=False)` on a fresh local store, what bench.py's add/s row
times), the default configuration beside cross-language off, in pairs of fresh processes run back to back
(issue 41). bench.py runs its two configurations minutes apart, so the machine's load moves its add/s
ratio: 0.98x and 0.78x in two runs of one code (stop 54). Here each pair's two halves run within seconds,
in alternating order, and the table gives every pair's ratio and their median.

    python scripts/bench_adds.py [--pairs 6] [--adds 100] [--code DIR]

`--code DIR` runs another checkout's package (e.g. a worktree of an older commit) for a before/after pair.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(adds: int) -> dict[str, float]:
    """`adds` single adds, in this process, on a fresh store (ten untimed first): adds/s and p50 ms."""
    from bench import make_embedder, texts

    from hippocampus import Memory

    emb = make_embedder("offline")
    emb.encode(["warm up"], role="query")
    sample = texts(adds + 10, seed=1)
    with tempfile.TemporaryDirectory(prefix="bench-adds-") as tmp, Memory(milvus_uri=str(Path(tmp) / "m.db"), embedder=emb) as mem:
        for t in sample[:10]:
            mem.add(t, user_id="warm", infer=False)
        took = []
        for t in sample[10:]:
            t0 = time.perf_counter()
            mem.add(t, user_id="bench-add", infer=False)
            took.append(time.perf_counter() - t0)
    return {"adds_per_s": len(took) / sum(took), "p50_ms": statistics.median(took) * 1000}


def child_env(off: bool, code: str | None) -> dict[str, str]:
    """A child's environment: cross-language off or the default, and `code`'s package first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("HIPPOCAMPUS_CROSSLANG_EMBEDDER", "PYTHONDONTWRITEBYTECODE")}
    if off:
        env["HIPPOCAMPUS_CROSSLANG_EMBEDDER"] = "none"
    if code:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(code).resolve()), env.get("PYTHONPATH")) if p)
    return env


def run_child(adds: int, off: bool, code: str | None) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--one", "--adds", str(adds)], env=child_env(off, code),
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(pairs: list[tuple[dict[str, float], dict[str, float]]]) -> str:
    """Each pair's adds/s and p50, default and off, and the ratio; then the medians."""
    lines = ["| pair | default adds/s | off adds/s | default / off | default p50 ms | off p50 ms |", "|---|---|---|---|---|---|"]
    ratios = []
    for n, (d, o) in enumerate(pairs, 1):
        ratios.append(d["adds_per_s"] / o["adds_per_s"])
        lines.append(f"| {n} | {d['adds_per_s']:.1f} | {o['adds_per_s']:.1f} | {ratios[-1]:.2f}x | {d['p50_ms']:.1f} | {o['p50_ms']:.1f} |")
    med = statistics.median
    lines.append(f"| median | {med(d['adds_per_s'] for d, _ in pairs):.1f} | {med(o['adds_per_s'] for _, o in pairs):.1f} | "
                 f"**{med(ratios):.2f}x** | {med(d['p50_ms'] for d, _ in pairs):.1f} | {med(o['p50_ms'] for _, o in pairs):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--adds", type=int, default=100)
    ap.add_argument("--code", help="another checkout whose package the children run")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.adds)))
        return 0
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for n in range(args.pairs):
        first_off = n % 2 == 1  # alternate which half goes first: a drift in load falls on both
        a = run_child(args.adds, first_off, args.code)
        b = run_child(args.adds, not first_off, args.code)
        pairs.append((b, a) if first_off else (a, b))
        print(f"pair {n + 1}/{args.pairs}: {pairs[-1][0]['adds_per_s']:.1f} / {pairs[-1][1]['adds_per_s']:.1f} adds/s", file=sys.stderr)
    print(table(pairs))
    print(f"\n{args.adds} adds a process; code: {args.code or Path(__file__).resolve().parents[1]}; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
