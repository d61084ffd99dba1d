"""How consolidation scales: seconds, similarity look-ups and LLM calls at 1k, 5k and 10k episodes.

Each episode finds its neighbours with one Milvus search using its own stored vector
(k = consolidation_neighbours), so look-ups grow with n and pair judgements with n x k,
never with n^2. The data are synthetic: a few users, random unit vectors inserted
directly into the store (no embedder run for them), with a share of near-duplicate
pairs (cosine 0.95, the second telling repeats the first and adds a detail) and of
look-alike pairs (cosine 0.85, a different number: two events of one kind). The LLM is
the offline rules provider (deterministic, no network); texts that merges and
separations rewrite are embedded with a hash embedder of the same dimension.

    python scripts/bench_consolidation.py                    # 1000,5000,10000 (minutes)
    python scripts/bench_consolidation.py --sizes 500,1000   # quick
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from hippocampus import Memory
from hippocampus.llm.rules import RulesProvider
from hippocampus.models import ts_to_iso
from hippocampus.testing import DeterministicEmbedder

T0 = 1_767_258_000
CITIES = ["Lisbon", "Osaka", "Quito", "Tallinn", "Hanoi", "Cusco", "Bergen", "Dakar", "Perth", "Oaxaca"]


def _near(v: np.ndarray, sim: float, rng: np.random.Generator) -> np.ndarray:
    u = rng.normal(size=v.shape[0])
    u -= u.dot(v) * v
    u /= np.linalg.norm(u)
    w = sim * v + np.sqrt(1 - sim**2) * u
    return w / np.linalg.norm(w)


def synthetic_rows(n: int, users: int, dim: int, dup_share: float, alike_share: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    i = 0
    while len(rows) < n:
        user = f"user{i % users}"
        city = CITIES[i % len(CITIES)]
        ts = T0 + 3600 * (i // users)
        base = rng.normal(size=dim)
        base /= np.linalg.norm(base)
        text = f"Trip {i}: we walked along the old harbour of {city} and met guide number {i}"
        batch = [(text, base, ts, f"chat{i}")]
        roll = rng.random()
        if roll < dup_share and len(rows) + 2 <= n:
            batch.append((f"{text}. The fish soup there was excellent", _near(base, 0.95, rng), ts + 300, f"chat{i}"))
        elif roll < dup_share + alike_share and len(rows) + 2 <= n:
            batch.append((f"Trip {i + 100000}: we walked along the old harbour of {city} and met guide number {i + 100000}",
                          _near(base, 0.85, rng), ts + 86400, f"chat{i}b"))
        for t, v, when, chat in batch:
            rows.append({"user_id": user, "memory_type": "episodic", "ts": when, "chat_id": chat, "who": user, "text": t,
                         "hit_count": 0, "vector": v.astype(np.float32).tolist(),
                         "metadata": {"context": "", "thing": t, "time": ts_to_iso(when), "chatid": chat, "who": user}})
        i += 1
    return rows


def run(n: int, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        llm = RulesProvider()
        memory = Memory(milvus_uri=str(Path(tmp) / "bench.db"), embedder=DeterministicEmbedder(args.dim, lexical=False, model_name=f"bench-hash-{args.dim}"), llm=llm,
                        t_merge_high=args.merge, t_amb_low=args.ambiguous, consolidation_neighbours=args.k)
        try:
            rows = synthetic_rows(n, args.users, args.dim, args.dup_share, args.alike_share, args.seed)
            for start in range(0, len(rows), 1000):
                memory.store.insert(rows[start : start + 1000])
            started = time.perf_counter()
            stats = memory.consolidate()
            seconds = time.perf_counter() - started
            after = memory.stats()
        finally:
            memory.close()
    return {"n": n, "seconds": seconds, "rules_provider_calls": llm.calls, "episodic_after": after["episodic"],
            "semantic_after": after["semantic"], **stats.model_dump(exclude={"seconds"})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000,10000")
    ap.add_argument("--users", type=int, default=5)
    ap.add_argument("--dim", type=int, default=384, help="vector dimension (384 = the offline e5 model)")
    ap.add_argument("--k", type=int, default=5, help="consolidation_neighbours")
    ap.add_argument("--merge", type=float, default=0.90, help="t_merge_high")
    ap.add_argument("--ambiguous", type=float, default=0.80, help="t_amb_low")
    ap.add_argument("--dup-share", type=float, default=0.10)
    ap.add_argument("--alike-share", type=float, default=0.10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    console = Console()
    console.print(f"synthetic episodes: {args.users} users, {args.dim}-d random vectors inserted directly (no embedder for them), "
                  f"{args.dup_share:.0%} near-duplicate pairs (cos 0.95), {args.alike_share:.0%} look-alike pairs (cos 0.85); "
                  f"LLM: offline rules provider; k={args.k}, t_merge_high={args.merge}, t_amb_low={args.ambiguous}")
    results = []
    for n in sizes:
        results.append(run(n, args))
        console.print(f"  n={n}: {results[-1]['seconds']:.1f} s")
    table = Table(title="consolidation cost by store size")
    for col in ("episodes n", "seconds", "ms / episode", "similarity look-ups", "look-ups / n", "LLM calls", "LLM calls / n",
                "merged", "separated", "semantic", "n x k", "n^2 / 2"):
        table.add_column(col, justify="right")
    for r in results:
        n = r["n"]
        table.add_row(str(n), f"{r['seconds']:.1f}", f"{1000 * r['seconds'] / n:.1f}", str(r["similarity_lookups"]),
                      f"{r['similarity_lookups'] / n:.2f}", str(r["llm_calls"]), f"{r['llm_calls'] / n:.2f}", str(r["merged"]),
                      str(r["separated"]), str(r["semantic_created"]), str(n * args.k), str(n * (n - 1) // 2))
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
