#!/usr/bin/env python
"""Where an offline consolidation of a realistic conversation spends its time, as the store grows.

For each size: a fresh milvus-lite store in a temporary directory filled with LoCoMo turns (the
loader of scripts/eval_locomo.py; each conversation is one user, stored with infer=False through
`Memory.add_many` as eval_locomo stores them; past the ten conversations they come again as new
users), then `Memory.consolidate()` with the offline defaults (the bundled embedder, the rules
provider as the LLM) under cProfile. Candidate pairs are the pairs the similarity search proposed
to the judges (Merger or Separator), as the run's ConsolidationStats counts them (`candidate_pairs`);
store calls are the MilvusStore methods called during the run.

    python scripts/bench_consolidation.py                      # 1500,10000 (the second takes minutes)
    python scripts/bench_consolidation.py --sizes 300 --top 10
    python scripts/bench_consolidation.py --one-user           # every turn one user's (the per-user growth)

The data (CC BY-NC 4.0) is read from ../shared/bench/locomo/ and never copied into the repo.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from eval_locomo import DEFAULT_DATA, turns_of  # noqa: E402

from hippocampus import Memory  # noqa: E402
from hippocampus.embeddings import OfflineEmbedder  # noqa: E402
from hippocampus.store import MilvusStore  # noqa: E402

STORE_CALLS = ("insert", "upsert", "delete", "query", "iterate", "count", "search_dense", "search_bm25", "search_hybrid",
               "search_exact", "vectors", "add_history", "history", "delete_history")


def memories(data: list[dict[str, Any]], n: int, one_user: bool) -> list[dict[str, Any]]:
    """n add_many items: the conversations' turns in order, each conversation a user (or all one user)."""
    out: list[dict[str, Any]] = []
    now, lap = int(time.time()), 0
    while len(out) < n:
        for ci, sample in enumerate(data):
            user = "alice" if one_user else f"{sample.get('sample_id', ci)}-{lap}"
            # one user's later laps happen a year earlier each, so no turn repeats on one day
            out += [{**t, "user_id": user, "ts": t["ts"] - lap * 366 * 86400} for t in turns_of(sample, now=now)]
        lap += 1
    return out[:n]


class Reused:
    """The offline embedder, each distinct text embedded once: a later lap's users say the same turns (building only)."""

    def __init__(self, embedder: OfflineEmbedder):
        self.embedder, self.model_name, self.dim = embedder, embedder.model_name, embedder.dim
        self.seen: dict[tuple[str, str], np.ndarray] = {}

    def encode(self, texts: list[str], role: str = "passage") -> np.ndarray:
        new = list(dict.fromkeys(t for t in texts if (t, role) not in self.seen))
        if new:
            self.seen.update(((t, role), v) for t, v in zip(new, self.embedder.encode(new, role=role)))  # type: ignore[arg-type]
        return np.stack([self.seen[(t, role)] for t in texts])


class Counted:
    """Counts the MilvusStore calls made while it is active (wraps the class's methods)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.depth = 0
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> Counted:
        for name in STORE_CALLS:
            original = getattr(MilvusStore, name)
            self._saved[name] = original

            def wrapper(store: MilvusStore, *a: Any, _name: str = name, _f: Any = original, **kw: Any) -> Any:
                self.calls[_name] += self.depth == 0  # the outermost call only (vectors() is a query inside)
                self.depth += 1
                try:
                    return _f(store, *a, **kw)
                finally:
                    self.depth -= 1

            setattr(MilvusStore, name, wrapper)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(MilvusStore, name, original)


def run(n: int, data: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    items = memories(data, n, args.one_user)
    with tempfile.TemporaryDirectory(prefix="consolidation-") as tmp:
        db = Path(tmp) / "c.db"
        built = args.cache / f"{n}-{'one' if args.one_user else 'many'}" if args.cache else None
        t0 = time.perf_counter()
        if built is not None and built.exists():
            shutil.copytree(built, db.parent, dirs_exist_ok=True)
        else:
            filled = Memory(milvus_uri=str(db), embedder=Reused(OfflineEmbedder()))
            for start in range(0, len(items), 1000):
                filled.add_many(items[start : start + 1000])
            filled.close()
            if built is not None:
                shutil.copytree(db.parent, built)
        build_s = time.perf_counter() - t0
        memory = Memory(milvus_uri=str(db))
        try:
            memory.embedder.encode(["warm up"], role="passage")  # the model's load is not consolidation's
            profile = cProfile.Profile()
            with Counted() as store:
                t0 = time.perf_counter()
                if args.profile:
                    profile.enable()
                stats = memory.consolidate()
                profile.disable()
                seconds = time.perf_counter() - t0
            after = memory.stats()
        finally:
            memory.close()
    top: list[tuple[str, float]] = []
    ps = pstats.Stats(profile) if args.profile else None
    if ps is not None and args.pstats:
        ps.dump_stats(f"{args.pstats}.{n}")
    for func in ps.sort_stats("cumulative").fcn_list if ps else []:  # type: ignore[attr-defined]
        filename, line, name = func
        if "hippocampus" not in filename or "tracing.py" in filename or "consolidate" in name or name in ("run", "episodes"):
            continue  # the facade, its tracing wrapper and the job's own run: every row is under them
        cumulative = ps.stats[func][3]  # type: ignore[attr-defined]
        top.append((f"{Path(filename).parent.name}/{Path(filename).name}:{line}({name})", cumulative))
        if len(top) == args.top:
            break
    return {"n": n, "users": len({i["user_id"] for i in items}), "build_s": build_s, "seconds": seconds,
            "pairs": stats.candidate_pairs, "store_calls": sum(store.calls.values()), "store_by_method": dict(store.calls),
            "stats": stats.model_dump(), "after": {k: after[k] for k in ("episodic", "semantic")}, "top": top}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sizes", default="1500,10000")
    ap.add_argument("--one-user", action="store_true", help="every turn one user's (default: a user per conversation)")
    ap.add_argument("--top", type=int, default=5, help="functions by cumulative time")
    ap.add_argument("--no-profile", dest="profile", action="store_false",
                    help="seconds without cProfile's overhead (no function table)")
    ap.add_argument("--cache", type=Path, help="keep each filled store here and start from a copy next time "
                    "(the stores hold LoCoMo text: keep them outside the repository)")
    ap.add_argument("--pstats", type=Path, help="also write each size's profile to PSTATS.<size> (for pstats or snakeviz)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    load = os.getloadavg()[0]
    results = [run(int(s), data, args) for s in args.sizes.split(",") if s.strip()]
    print(f"offline consolidation of LoCoMo turns ({'one user' if args.one_user else 'a user per conversation'}), "
          f"{'under cProfile' if args.profile else 'no profiler'}; "
          f"load average {load:.1f} on {os.cpu_count()} cores at the start\n")
    print("| memories | users | seconds | candidate pairs | pairs / memory | store calls | ms / memory | merged | separated | facts |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        n, s = r["n"], r["stats"]
        print(f"| {n:,} | {r['users']} | {r['seconds']:.1f} | {r['pairs']:,} | {r['pairs'] / n:.2f} | {r['store_calls']:,} | "
              f"{1000 * r['seconds'] / n:.1f} | {s['merged']} | {s['separated']} | {s['semantic_created']} |")
    for r in results:
        print(f"\n{r['n']:,} memories: store calls {json.dumps(r['store_by_method'], sort_keys=True)}")
        print("| function | cumulative s |\n|---|---|")
        for name, cumulative in r["top"]:
            print(f"| {name} | {cumulative:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
