#!/usr/bin/env python
"""How a process should reach the cross-language vectors of a local store (issue 41), measured.

    python scripts/bench_xvector_load.py --rows 10000 --users 100 --queries 200

Builds a store of `--rows` memories over `--users` users (bench.py's texts, one in seven Chinese), then
opens it once per strategy in a fresh process, as a service or a CLI finds it, and runs the same
`--queries` dense searches (the query's e5 vector computed beforehand; the cross-language stage
included, its USE query embedding too) for users drawn at random:
- `off`: no cross-language stage (HIPPOCAMPUS_CROSSLANG_EMBEDDER=none), the floor;
- `milvus`: Milvus searches the companion collection on every search;
- `bulk` (the default): the second search starts a background thread that reads every user's vectors,
  page by page; searches go through Milvus until it is done, then run in memory (store/xvector_copy.py `Loader`);
- `sync`: the code before issue 41, a user's vectors read inside their first search.
The stored vectors are random unit vectors (embedding 10,000 texts twice would take minutes here):
what is measured is reading and searching them, which does not depend on their values.
Prints a table: search p50 / p90 / p99 / mean, the mean of each user's first search, for `bulk` the searches
that ran while the background read did (their number and mean) and when it was over, peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import texts  # noqa: E402

STRATEGIES = ("off", "milvus", "bulk", "sync")


class _Random:
    """Random unit vectors under a real model's name and size (the store checks both)."""

    def __init__(self, model_name: str, dim: int):
        self.model_name, self._dim, self._rng = model_name, dim, np.random.default_rng(0)

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, batch: Any, role: str = "passage") -> np.ndarray:
        m = self._rng.normal(size=(len(batch), self._dim)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def build(path: str, rows: int, users: int) -> None:
    from hippocampus import Memory
    from hippocampus.embeddings import crosslang
    from hippocampus.embeddings.offline import MODEL_NAME

    crosslang._SHARED[crosslang.NAME] = _Random(crosslang.MODEL_NAME, crosslang.DIM)  # type: ignore[assignment]
    owner = np.random.default_rng(3).integers(users, size=rows)
    with Memory(milvus_uri=path, embedder=_Random(MODEL_NAME, 384)) as mem:
        base = texts(rows, seed=2)
        for s in range(0, rows, 1000):
            mem.add_many([{"text": t, "user_id": f"user-{owner[i]}", "ts": 1_700_000_000 + i}
                          for i, t in enumerate(base[s:s + 1000], start=s)])


def run(path: str, strategy: str, users: int, queries: int) -> dict[str, Any]:
    from hippocampus import Memory
    from hippocampus.store.xvector_copy import UserVectors as _UserVectors

    t0 = time.perf_counter()
    mem = Memory(milvus_uri=path)
    out: dict[str, Any] = {"strategy": strategy, "open_s": time.perf_counter() - t0}
    cross = mem.store.cross
    qtexts = texts(queries, seed=4)
    qvecs = mem.embedder.encode(qtexts, role="query")
    if cross.active:
        cross.embedder.encode(["warm"])
        cross.load_in_background = strategy == "bulk"
    if strategy == "sync":  # the code before issue 41: a user's vectors read inside their first search
        from hippocampus.store import filters as F
        from hippocampus.store.xvector_copy import XVEC_FIELDS, XVECTOR

        real = cross._loaded

        def loaded_now(user_id: str) -> Any:
            if user_id not in cross._users:
                rows = cross.host._call("query", cross.name, filter=F.eq("user_id", user_id),
                                        output_fields=[*XVEC_FIELDS, XVECTOR], limit=16384)
                cross._users[user_id] = _UserVectors(rows, cross.embedder.dim)
            return real(user_id)

        cross._loaded = loaded_now  # type: ignore[method-assign]
    rng = np.random.default_rng(5)
    lat, first, seen, reading = [], [], set(), []
    started, read_s = time.perf_counter(), None
    for q, v, u in zip(qtexts, qvecs, rng.integers(users, size=queries)):
        t0 = time.perf_counter()
        mem.retriever.search(q, f"user-{u}", 10, query_vector=v, mode="dense")
        lat.append(time.perf_counter() - t0)
        if strategy == "bulk" and read_s is None:
            if cross.all_loaded:
                read_s = t0 - started  # the read was over by this search (to within one search)
            elif len(lat) > 1:  # the second search started it: the ones it overlapped
                reading.append(lat[-1])
        if u not in seen:
            seen.add(u)
            first.append(lat[-1])
    out["wall_s"] = time.perf_counter() - started
    ms = np.asarray(lat) * 1000
    out.update(p50=float(np.percentile(ms, 50)), p90=float(np.percentile(ms, 90)), p99=float(np.percentile(ms, 99)),
               mean=float(ms.mean()), first_mean=float(np.mean(first) * 1000), users_seen=len(seen),
               read_s=read_s, during_read=len(reading), during_read_mean=float(np.mean(reading) * 1000) if reading else None,
               rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
    mem.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run(args.one[0], args.one[1], args.users, args.queries)))
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="xvload-") as tmp:
        path = str(Path(tmp) / "m.db")
        build(path, args.rows, args.users)
        for strategy in args.strategies.split(","):
            env = {**os.environ, "HIPPOCAMPUS_HOME": tmp}
            if strategy == "off":
                env["HIPPOCAMPUS_CROSSLANG_EMBEDDER"] = "none"
            proc = subprocess.run([sys.executable, __file__, "--one", path, strategy, "--users", str(args.users),
                                   "--queries", str(args.queries)], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{args.rows} memories, {args.users} users, {args.queries} dense searches (cross-language stage included)")
    print("| strategy | search p50 ms | p90 ms | p99 ms | mean ms | first search of a user, mean ms | "
          "searches during the read | their mean ms | read s | wall s | RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        during = f"{r['during_read']} | {r['during_read_mean']:.1f}" if r.get("during_read_mean") is not None else " | "
        read = f"{r['read_s']:.2f}" if r.get("read_s") is not None else ""
        print(f"| {r['strategy']} | {r['p50']:.1f} | {r['p90']:.1f} | {r['p99']:.1f} | {r['mean']:.1f} | {r['first_mean']:.1f} | "
              f"{during} | {read} | {r['wall_s']:.2f} | {r['rss_mb']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
