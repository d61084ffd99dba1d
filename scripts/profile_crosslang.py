#!/usr/bin/env python
"""Where one dense search's time goes with the cross-language stage on, and without it (issue 41).

    python scripts/profile_crosslang.py --rows 10000 --users 100 --queries 100

Builds bench.py's store (its texts, one in seven Chinese, so every user has memories in both scripts:
the case where every English question pays the stage; `--embed-max` rows embedded for real, the rest
real vectors plus noise), opens it as a service would, then runs `--queries` dense searches (the e5
query vector computed beforehand, as bench.py's `dense` column) for random users, timing each part of
every search: the dense gathering, the hubness stage, and the stage's own parts: the USE query
embedding, the nearest cross vectors (a search of the companion in the user's bucket), the read of the
gathered rows from Milvus, the USE cosines of the query's own candidates (a read of the companion), the
rest of the rescoring. Then the same searches with the stage off.
Prints a table of medians per search (ms) and each part's share of the default's median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import fill_store, make_embedder, size_args, texts  # noqa: E402

PARTS = ("dense gathering", "hubness", "USE query embedding", "nearest cross vectors (Milvus)",
         "read of the gathered rows", "own candidates' USE cosines", "rest of the stage")


def _timed(owner: Any, name: str, part: str, spent: dict[str, float]) -> None:
    real = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.perf_counter() - t0

    setattr(owner, name, wrapper)


def searches(mem: Any, queries: list[tuple[str, np.ndarray, str]], crosslang: bool) -> dict[str, list[float]]:
    """Each part's milliseconds in each search (the parts nested in the stage subtracted from it)."""
    from hippocampus.retrieval import stages

    spent: dict[str, float] = {}
    r = mem.retriever
    _timed(r, "dense", "dense gathering", spent)
    _timed(r.store, "query", "read", spent)
    timed_stages = {"hubness": stages.hubness, "crosslang": stages.crosslang}
    for name in timed_stages:
        _timed(stages, name, "stage " + name, spent)
    real_stages = stages.STAGES  # read by Retriever.search at call time
    stages.STAGES = tuple(getattr(stages, s.__name__) if s.__name__ in timed_stages else s for s in real_stages)
    cross = mem.store.cross if crosslang else None
    if cross is not None:
        _timed(cross.embedder, "encode", "USE query embedding", spent)
        _timed(cross, "nearest", "nearest cross vectors (Milvus)", spent)
        _timed(cross, "cosines", "own candidates' USE cosines", spent)
    out: dict[str, list[float]] = {}
    try:
        for q, v, user in queries:
            spent.clear()
            t0 = time.perf_counter()
            r.search(q, user, 10, query_vector=v, mode="dense")
            total = time.perf_counter() - t0
            stage = spent.get("stage crosslang", 0.0)
            row = {"dense gathering": spent.get("dense gathering", 0.0), "hubness": spent.get("stage hubness", 0.0),
                   "search": total}
            if cross is not None:
                inner = {p: spent.get(p, 0.0) for p in PARTS[2:6] if p != "read of the gathered rows"}
                inner["read of the gathered rows"] = spent.get("read", 0.0)  # the stage is the only reader here
                inner["rest of the stage"] = stage - sum(inner.values())
                row.update(inner)
            for k, val in row.items():
                out.setdefault(k, []).append(val * 1000.0)
    finally:
        stages.STAGES = real_stages
        for name, fn in timed_stages.items():
            setattr(stages, name, fn)
    return out


def run(rows: int, users: int, queries: int, embed_max: int) -> list[dict[str, Any]]:
    import os

    from hippocampus import Memory

    emb = make_embedder("offline")
    results = []
    with tempfile.TemporaryDirectory(prefix="xl-profile-") as tmp:
        path = str(Path(tmp) / "m.db")
        rng = fill_store(path, rows, users, embed_max, emb)
        qtexts = texts(queries, seed=4)
        asked = [(q, emb.encode([q], role="query")[0], f"user-{u}") for q, u in zip(qtexts, rng.integers(users, size=queries))]
        for label, setting in (("default", None), ("off", "none")):
            if setting is not None:
                os.environ["HIPPOCAMPUS_CROSSLANG_EMBEDDER"] = setting
            try:
                mem = Memory(milvus_uri=path, embedder=emb)
                on = setting is None
                if on:
                    for q, v, user in asked[:2]:  # the model loaded and the companion opened, as in a service
                        mem.retriever.search(q, user, 10, query_vector=v, mode="dense")
                times = searches(mem, asked, on)
                mem.close()
            finally:
                os.environ.pop("HIPPOCAMPUS_CROSSLANG_EMBEDDER", None)
            results.append({"cross-language": label, **{k: statistics.median(v) for k, v in times.items()}})
    return results


def print_table(results: list[dict[str, Any]]) -> None:
    default = next(r for r in results if r["cross-language"] == "default")
    print("| part of one dense search | " + " | ".join(r["cross-language"] for r in results) + " | share of default |")
    print("|---|" + "---|" * len(results) + "---|")
    for part in [*PARTS, "search"]:
        cells = [f"{r[part]:.2f}" if part in r else "-" for r in results]
        share = f"{100 * default.get(part, 0.0) / default['search']:.0f}%" if part != "search" else ""
        print(f"| {part} | " + " | ".join(cells) + f" | {share} |")
    off = next((r for r in results if r["cross-language"] == "off"), None)
    if off:
        print(f"\nmedian ms per search (each part's median on its own: they need not add up); "
              f"default / off = {default['search'] / off['search']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size_args(ap)
    ap.add_argument("--json", help="also write the medians here")
    args = ap.parse_args(argv)
    results = run(args.rows, args.users, args.queries, args.embed_max)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
