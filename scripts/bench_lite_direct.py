#!/usr/bin/env python
"""A local store's searches with milvus-lite's engine asked directly and through its gRPC server, paired.

    python scripts/bench_lite_direct.py --rows 10000 --users 100 --queries 100

Builds bench.py's store (its texts, one in seven Chinese; `--embed-max` rows embedded for real, the rest
real vectors plus noise), or opens `--uri`, waits for the in-memory copy of the cross vectors (as a
service has it), then runs each query in each mode (dense, hybrid, bm25) twice in a row, once with
`HIPPOCAMPUS_LITE_DIRECT=off` (through pymilvus and milvus-lite's gRPC server, as before store/lite_direct.py)
and once without, alternating which goes first. Both halves run in one process on one store, so the
machine's load moves them together. Prints the median ms of each and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import fill_store, make_embedder, size_args, texts  # noqa: E402

MODES = ("dense", "hybrid", "bm25")


def paired(path: str, users: int, queries: int, emb: Any) -> dict[tuple[str, str], list[float]]:
    """Milliseconds of each search, by (mode, "engine" or "gRPC")."""
    from hippocampus import Memory

    mem = Memory(milvus_uri=path, embedder=emb)
    asked = texts(queries, seed=4)
    vectors = emb.encode(asked, role="query")
    owners = np.random.default_rng(5).integers(users, size=queries)
    for q in asked[:2]:  # warm: the cross-language model loaded and the companion opened
        mem.search(q, user_id="user-0", limit=10)
    out: dict[tuple[str, str], list[float]] = {(m, p): [] for m in MODES for p in ("engine", "gRPC")}
    try:
        for i, (q, v, u) in enumerate(zip(asked, vectors, owners)):
            for mode in MODES:
                for path_ in (("engine", "gRPC") if i % 2 else ("gRPC", "engine")):
                    if path_ == "gRPC":
                        os.environ["HIPPOCAMPUS_LITE_DIRECT"] = "off"  # read at each call
                    t0 = time.perf_counter()
                    mem.retriever.search(q, f"user-{u}", 10, query_vector=v, mode=mode)
                    out[(mode, path_)].append((time.perf_counter() - t0) * 1000)
                    os.environ.pop("HIPPOCAMPUS_LITE_DIRECT", None)
    finally:
        os.environ.pop("HIPPOCAMPUS_LITE_DIRECT", None)
        mem.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size_args(ap)
    ap.add_argument("--uri", help="an existing local store (its users named user-0, user-1...) instead of a new one")
    args = ap.parse_args(argv)
    emb = make_embedder("offline")
    with tempfile.TemporaryDirectory(prefix="lite-direct-") as tmp:
        path = args.uri or str(Path(tmp) / "m.db")
        if not args.uri:
            fill_store(path, args.rows, args.users, args.embed_max, emb)
        out = paired(path, args.users, args.queries, emb)
    print(f"{args.queries} queries of each mode, each through both paths in one process (median ms)\n")
    print("| mode | through gRPC | the engine | engine / gRPC |")
    print("|---|---|---|---|")
    for mode in MODES:
        grpc, engine = statistics.median(out[(mode, "gRPC")]), statistics.median(out[(mode, "engine")])
        print(f"| {mode} | {grpc:.2f} | {engine:.2f} | {engine / grpc:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
