#!/usr/bin/env python
"""Where the time of a default hybrid search goes on milvus-lite, at 10k and 100k memories.

    python scripts/profile_hybrid.py --sizes 10k,100k --queries 100        # the timing table
    python scripts/profile_hybrid.py --sizes 100k --loop bm25 --queries 100  # one call in a loop, to sample with py-spy:
    py-spy record -r 100 --format raw -o spy.txt -- python scripts/profile_hybrid.py --sizes 100k --loop hybrid --queries 150
    python scripts/profile_hybrid.py --spy-report spy.txt --queries 150      # its samples, per phase

The stores are built once under `--dir` the way scripts/bench.py builds them (100 users, up to
2,000 rows embedded by the offline e5 through add_many, the rest real vectors plus noise through
store.insert) and kept, so that later runs reuse them. Each variant runs the same queries (bench.py's
texts, seed 4, random users); latencies in ms. The floor is bench.py's numpy full scan.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import add_synthetic, parse_size, texts  # noqa: E402
from bench_engine import floor_latencies  # noqa: E402

USERS = 100


def build(path: Path, n: int, emb: Any, embed_max: int = 2000) -> None:
    """bench.py's store: real rows through add_many, the rest real vectors plus noise."""
    from hippocampus import Memory

    path.parent.mkdir(parents=True, exist_ok=True)
    mem = Memory(milvus_uri=str(path), embedder=emb)
    n_real = min(n, embed_max)
    base = texts(n_real, seed=2)
    rng = np.random.default_rng(3)
    owner = rng.integers(USERS, size=n)
    mem.add_many([{"text": t, "user_id": f"user-{owner[i]}", "ts": 1_700_000_000 + i} for i, t in enumerate(base)])
    matrix = add_synthetic(mem, n, base, owner, rng)
    mem.close()
    np.save(path.parent / "matrix.npy", matrix)
    np.save(path.parent / "owner.npy", owner)


def timed(fn: Callable[[int], Any], count: int) -> tuple[float, float]:
    fn(0)  # warm: the first sparse search of a segment builds its inverted index
    lat = []
    for i in range(count):
        t0 = time.perf_counter()
        fn(i)
        lat.append(time.perf_counter() - t0)
    arr = np.asarray(lat) * 1000.0
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99))


def variants(mem: Any, qtexts: list[str], qvecs: np.ndarray, users: list[str]) -> dict[str, Callable[[int], Any]]:
    from hippocampus.store import MEMORY_FIELDS
    from hippocampus.store import filters as F

    r, s = mem.retriever, mem.store
    scopes = [r.scope(u) for u in users]
    parts = [s.partition_for(u) for u in users]
    full = [*MEMORY_FIELDS, "vector"]

    def bm25(fields: list[str], limit: int = 20, partition: bool = True, scope: bool = True) -> Callable[[int], Any]:
        return lambda i: s.search_bm25([qtexts[i]], scopes[i] if scope else "", limit, fields=fields,
                                       partition=parts[i] if partition else None)

    return {
        "hybrid (Retriever.search, default)": lambda i: r.search(qtexts[i], users[i], 10, query_vector=qvecs[i], mode="hybrid"),
        "dense (Retriever.search)": lambda i: r.search(qtexts[i], users[i], 10, query_vector=qvecs[i], mode="dense"),
        "bm25 (Retriever.search)": lambda i: r.search(qtexts[i], users[i], 10, mode="bm25"),
        "store.search_dense 20, fields+vector, partition": lambda i: s.search_dense([qvecs[i]], scopes[i], 20, fields=full, partition=parts[i]),
        "store.search_bm25 20, fields+vector, partition (gather before)": bm25(full),
        "store.search_bm25 20, fields, partition": bm25(list(MEMORY_FIELDS)),
        "store.search_bm25 20, id only, partition": bm25(["id"]),
        "store.search_bm25 20, id only, no partition": bm25(["id"], partition=False),
        "store.search_bm25 20, id only, partition, no filter": bm25(["id"], scope=False),
        "store.search_bm25 5, id only, partition": bm25(["id"], limit=5),
        "store.search_bm25 20, id only, partition, user_id filter only": lambda i: s.search_bm25(
            [qtexts[i]], F.eq("user_id", users[i]), 20, fields=["id"], partition=parts[i]),
        "store.search_dense 20, fields+vector, partition, user_id filter only": lambda i: s.search_dense(
            [qvecs[i]], F.eq("user_id", users[i]), 20, fields=full, partition=parts[i]),
        "hybrid, include_superseded=True (no JSON filter)": lambda i: r.search(
            qtexts[i], users[i], 10, query_vector=qvecs[i], mode="hybrid", include_superseded=True),
        "dense, include_superseded=True (no JSON filter)": lambda i: r.search(
            qtexts[i], users[i], 10, query_vector=qvecs[i], mode="dense", include_superseded=True),
        "store.vectors(20 ids)": lambda i: s.vectors(ids20[i % len(ids20)]),
        "store.query user scope, id+text, partition": lambda i: s.query(scopes[i], ["id", "text"], limit=16384, partition=parts[i]),
    }


ids20: list[list[int]] = []


def run_size(n: int, root: Path, queries: int, only: str | None, args_loop: bool = False) -> list[tuple[str, float, float]]:
    from hippocampus import Memory
    from hippocampus.embeddings import OfflineEmbedder

    emb = OfflineEmbedder()
    path = root / f"n{n}" / "m.db"
    if not (path.parent / "owner.npy").exists():
        t0 = time.perf_counter()
        build(path, n, emb)
        print(f"built {n} rows in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    matrix, owner = np.load(path.parent / "matrix.npy"), np.load(path.parent / "owner.npy")
    mem = Memory(milvus_uri=str(path), embedder=emb)
    qtexts = texts(queries, seed=4)
    qvecs = np.stack([emb.encode([q], role="query")[0] for q in qtexts])
    quser = np.random.default_rng(5).integers(USERS, size=queries)
    users = [f"user-{u}" for u in quser]
    ids20.clear()
    ids20.extend([int(h.memory.id) for h in mem.retriever.search(q, u, 20, query_vector=v, mode="dense")]
                 for q, v, u in zip(qtexts[:20], qvecs[:20], users[:20]))
    out = []
    for name, fn in variants(mem, qtexts, qvecs, users).items():
        if only and only not in name:
            continue
        p50, p99 = timed(fn, min(queries, 10) if "no partition" in name else queries)  # seconds each at 100k
        out.append((name, p50, p99))
        print(f"{n}: {name}: p50 {p50:.2f} p99 {p99:.2f}", file=sys.stderr)
    mem.close()
    if not args_loop:
        lat = np.asarray(floor_latencies(matrix, owner, qvecs, quser)) * 1000.0
        out.append(("numpy floor (bench.py)", float(np.percentile(lat, 50)), float(np.percentile(lat, 99))))
    return out


_FRAME = re.compile(r"(\w+) \(([^:]*):(\d+)\)")


def spy_report(path: Path, queries: int, rate: int) -> None:
    """py-spy raw samples of a --loop run, counted per phase: milvus-lite's Collection._search_sparse by the
    line the sample is on (milvus-lite 3.2.2), its dense search, its queries (count), the client side
    (pymilvus + hippocampus inside the timed loop). Samples outside the loop (start-up) are left out."""
    phases = [("BM25: global pk->seq map over every segment of the collection", 1031, 1043),
              ("BM25: inverted index build (first search of a segment)", 1044, 1064),
              ("BM25: per-row valid mask of the partition's segments", 1065, 1080),
              ("BM25: scalar filter of the partition's segments", 1081, 1090),
              ("BM25: scoring (SparseInvertedIndex.search)", 1091, 1103),
              ("BM25: memtable rows (rebuilt each search)", 1104, 1143),
              ("BM25: dedup + materialise every column of each hit", 1144, 1192)]
    by_phase: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = _FRAME.findall(stack)
        funcs = {f for f, _, _ in frames}
        where = None
        for func, file, lineno in frames:
            if func == "_search_sparse" and file.endswith("engine/collection.py"):
                where = f"BM25: other lines of _search_sparse ({lineno})"
                if 1015 <= int(lineno) <= 1017:
                    where = "BM25: analysing the query (jieba)"
                for label, lo, hi in phases:
                    if lo <= int(lineno) <= hi:
                        where = label
        if where is None:
            if "execute_search_with_index" in funcs:
                where = "dense search (milvus-lite engine)"
            elif "timed" in funcs:
                where = "client side: pymilvus, gRPC, hippocampus (fusion, hubness, context)"
            elif any(f in funcs for f in ("query", "_count", "count")) and any("milvus_lite" in p for _, p, _ in frames):
                where = "queries (count, vectors) in the engine"
            elif any("milvus_lite" in p for _, p, _ in frames) and "load" not in funcs:
                where = "engine: other (gRPC servicer, request handling)"
        if where is not None:
            by_phase[where] += int(count)
    total = sum(by_phase.values())
    print("| phase (py-spy samples of the timed loop) | samples | share | ms per search |\n|---|---|---|---|")
    for label, n in by_phase.most_common():  # the loop runs `queries` searches plus one to warm up
        print(f"| {label} | {n} | {100.0 * n / total:.1f}% | {1000.0 * n / rate / (queries + 1):.1f} |")
    print(f"| total | {total} | 100% | {1000.0 * total / rate / (queries + 1):.1f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/hippocampus-profile-hybrid"))
    ap.add_argument("--only", help="run only the variants whose name contains this")
    ap.add_argument("--loop", choices=("bm25", "hybrid"), help="one variant only, for py-spy: gather's BM25 call or the default hybrid search")
    ap.add_argument("--spy-report", type=Path, help="summarise a py-spy raw file (give the run's --queries and py-spy's -r)")
    ap.add_argument("--rate", type=int, default=100, help="--spy-report: py-spy's sampling rate (-r)")
    args = ap.parse_args(argv)
    if args.spy_report:
        spy_report(args.spy_report, args.queries, args.rate)
        return 0
    only = {"bm25": "(gather before)", "hybrid": "hybrid (Retriever.search, default)"}.get(args.loop or "", args.only)
    results = {n: run_size(n, args.dir, args.queries, only, bool(args.loop)) for n in map(parse_size, args.sizes.split(","))}
    sizes = list(results)
    print("| variant | " + " | ".join(f"{n:,} p50 | {n:,} p99" for n in sizes) + " |")
    print("|---|" + "---|---|" * len(sizes))
    for i, (name, *_rest) in enumerate(results[sizes[0]]):
        print(f"| {name} | " + " | ".join(f"{results[n][i][1]:.2f} | {results[n][i][2]:.2f}" for n in sizes) + " |")
    for n in sizes:
        floor = {name: p50 for name, p50, _ in results[n]}.get("numpy floor (bench.py)")
        if floor:
            print(f"{n:,} rows, p50 / floor p50: " + ", ".join(
                f"{name.split(' (')[0]} {p50 / floor:.1f}x" for name, p50, _ in results[n] if "Retriever.search" in name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
