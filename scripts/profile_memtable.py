#!/usr/bin/env python
"""What milvus-lite's unflushed rows cost a search and a flush, milvus-lite as it ships.

    python scripts/profile_memtable.py                       # 512-d (the companion) and 384-d rows
    python scripts/profile_memtable.py --rows 3000 --dims 512 --searches 30
    python scripts/profile_memtable.py --memories 2000   # through Memory: add_many, then searches in that process
    python scripts/profile_memtable.py --memories 1500 --one-at-a-time   # Memory.add per memory, as a chat hook
    python scripts/profile_memtable.py --insert-rss 10000   # what milvus-lite's insert path leaves resident
    python scripts/profile_memtable.py --insert-rss 10000 --index AUTOINDEX,FLAT   # the companion's index either way
    python scripts/profile_memtable.py --insert-rss 10000 --per-call 1   # one row a call, as a chat hook writes

milvus-lite keeps the rows written since its last flush in memory and turns each of them into Python
objects cell by cell on every search and on every flush (this package once replaced those two methods at
run time, store/lite_memtable.py; issue 56 removed that: docs/performance.md, "No run-time patches of
milvus-lite"). Each configuration runs in a fresh process: a local collection with 2,000
flushed rows, then `--rows` more left in the memtable (under the store's 8 MB budget, store/connection.py); the table
gives the search p50 with those rows unflushed (a user filter, no partition: as the cross-language
companion is searched; and within one of 8 partitions: as the memories are), the time of their flush
(client.flush), and the process's peak RSS. `--memories N` measures the path a service takes instead:
a Memory (the defaults: bundled e5, cross-language vectors) takes N memories of 20 users through add_many,
then answers dense searches in the same process, while the rows written last are still unflushed; then
the same searches after the store was closed and opened again (everything flushed). With
`--one-at-a-time` the memories go in through Memory.add, one call each (infer=False), as a chat hook's
turns do: each is then its own batch in milvus-lite's memtable. `--insert-rss N` inserts N 512-d rows
(the cross-language companion's width) into a bare collection 500 at a time (`--per-call`) and prints how much the
process grew (current and peak RSS), and how much remains after pyarrow's pool and glibc's malloc gave
back what they hold unused: what milvus-lite's gRPC insert path leaves resident beside the rows' 2 KB each;
with the time of the inserts, of the flush and of 20 searches filtered by user, for each index of `--index`
(AUTOINDEX: milvus-lite's faiss HNSW; FLAT: numpy over the segment's matrix), each in its own process.
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

import numpy as np


def run_one(rows: int, dim: int, searches: int) -> dict:
    from pymilvus import DataType, MilvusClient

    from hippocampus.store import connection  # noqa: F401  (sets the memtable budget as the store does)

    with tempfile.TemporaryDirectory(prefix="memtable-", ignore_cleanup_errors=True) as tmp:  # milvus-lite may still write
        c = MilvusClient(str(Path(tmp) / "m.db"))
        s = c.create_schema(auto_id=False)
        s.add_field("id", DataType.INT64, is_primary=True)
        s.add_field("user_id", DataType.VARCHAR, max_length=64)
        s.add_field("text", DataType.VARCHAR, max_length=1000)
        s.add_field("v", DataType.FLOAT_VECTOR, dim=dim)
        index = c.prepare_index_params()
        index.add_index("v", index_type="AUTOINDEX", metric_type="COSINE")
        c.create_collection("t", schema=s, index_params=index)
        parts = [f"p{i}" for i in range(8)]
        for p in parts:
            c.create_partition("t", p)
        rng = np.random.default_rng(0)

        def insert(start: int, n: int) -> None:
            for a in range(start, start + n, 500):
                k = min(500, start + n - a)
                vecs = rng.normal(size=(k, dim)).astype(np.float32)
                for p in parts:
                    sel = [i for i in range(k) if (a + i) % 8 == int(p[1:])]
                    c.insert("t", [{"id": a + i, "user_id": f"u{(a + i) % 40}", "text": f"memory number {a + i} " * 4,
                                    "v": vecs[i].tolist()} for i in sel], partition_name=p)

        insert(0, 2000)
        c.flush("t")
        insert(2000, rows)
        time.sleep(1.0)  # background index builds of the flushed rows done
        out = {"rows": rows, "dim": dim}
        for name, kw in (("search_p50_ms", {}), ("partition_search_p50_ms", {"partition_names": ["p3"]})):
            lat = []
            for q in range(searches):
                v = rng.normal(size=dim).astype(np.float32).tolist()
                t0 = time.perf_counter()
                c.search("t", data=[v], anns_field="v", limit=10, filter=f'user_id == "u{q % 40}"', **kw)
                lat.append(time.perf_counter() - t0)
            out[name] = float(np.median(lat[2:]) * 1000)
        t0 = time.perf_counter()
        c.flush("t")
        out["flush_s"] = time.perf_counter() - t0
        c.close()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def run_memory(n: int, searches: int, single: bool = False) -> dict:
    from hippocampus import Memory

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench import texts

    with tempfile.TemporaryDirectory(prefix="memtable-", ignore_cleanup_errors=True) as tmp:  # milvus-lite may still write
        path = str(Path(tmp) / "m.db")
        mem = Memory(milvus_uri=path)
        t0 = time.perf_counter()
        if single:
            for i, t in enumerate(texts(n, seed=2)):
                mem.add(t, user_id=f"user-{i % 20}", infer=False)
        else:
            mem.add_many([{"text": t, "user_id": f"user-{i % 20}", "ts": 1_700_000_000 + i} for i, t in enumerate(texts(n, seed=2))])
        out = {"memories": n, "how": "add" if single else "add_many", "writes_s": time.perf_counter() - t0}
        questions = texts(searches, seed=4)
        vectors = [mem.embedder.encode([q], role="query")[0] for q in questions]

        def p50() -> float:
            lat = []
            for i, (q, v) in enumerate(zip(questions, vectors)):
                t = time.perf_counter()
                mem.retriever.search(q, f"user-{i % 20}", 10, query_vector=v, mode="dense")
                lat.append(time.perf_counter() - t)
            return float(np.median(lat[3:]) * 1000)

        out["live_search_p50_ms"] = p50()
        mem.close()
        mem = Memory(milvus_uri=path)
        out["reopened_search_p50_ms"] = p50()
        mem.close()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def insert_rss(n: int, index_type: str = "AUTOINDEX", per_call: int = 500) -> dict:
    """Resident growth from inserting `n` 512-d rows into a bare local collection indexed `index_type`,
    `per_call` a call; then the time of a flush and of searches filtered by user (through the index)."""
    import ctypes

    import pyarrow as pa
    from pymilvus import DataType, MilvusClient

    from hippocampus.store import connection  # noqa: F401  (the store's memtable budget)

    def rss() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    with tempfile.TemporaryDirectory(prefix="memtable-", ignore_cleanup_errors=True) as tmp:
        c = MilvusClient(str(Path(tmp) / "m.db"))
        s = c.create_schema(auto_id=False)
        s.add_field("id", DataType.INT64, is_primary=True)
        s.add_field("user_id", DataType.VARCHAR, max_length=64)
        s.add_field("v", DataType.FLOAT_VECTOR, dim=512)
        index = c.prepare_index_params()
        index.add_index("v", index_type=index_type, metric_type="COSINE")
        c.create_collection("t", schema=s, index_params=index)
        rng = np.random.default_rng(0)
        before, peak_before = rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        started = time.perf_counter()
        for start in range(0, n, per_call):
            vecs = rng.normal(size=(min(per_call, n - start), 512)).astype(np.float32)
            c.insert("t", [{"id": start + i, "user_id": f"u{i % 100}", "v": v.tolist()} for i, v in enumerate(vecs)])
        insert_s = time.perf_counter() - started
        started = time.perf_counter()
        c.flush("t")  # the segment and its index
        flush_s = time.perf_counter() - started
        lat = []
        for u in range(20):
            started = time.perf_counter()
            c.search("t", data=[rng.normal(size=512).astype(np.float32).tolist()], anns_field="v", limit=5, filter=f'user_id == "u{u}"')
            lat.append(time.perf_counter() - started)
        grown = rss() - before
        pa.default_memory_pool().release_unused()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except OSError:  # not glibc
            pass
        out = {"rows": n, "index": index_type, "per_call": per_call, "insert_s": insert_s, "flush_s": flush_s, "search_p50_ms": float(np.median(lat)) * 1000,
               "vectors_mb": n * 512 * 4 / 2**20, "grown_mb": grown, "after_release_mb": rss() - before,
               "peak_grown_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 - peak_before,
               "arrow_live_mb": pa.total_allocated_bytes() / 2**20}
        c.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=3000, help="rows left unflushed")
    ap.add_argument("--dims", default="512,384")
    ap.add_argument("--searches", type=int, default=30)
    ap.add_argument("--memories", type=int, help="through Memory: this many memories, then searches")
    ap.add_argument("--one-at-a-time", action="store_true", help="--memories through Memory.add, one call each")
    ap.add_argument("--insert-rss", type=int, help="rows of 512 floats inserted into a bare collection: the resident growth")
    ap.add_argument("--index", default="AUTOINDEX,FLAT", help="--insert-rss: the vector indexes compared, each in its own process")
    ap.add_argument("--per-call", type=int, default=500, help="--insert-rss: rows per insert call (1: a chat hook's writes)")
    ap.add_argument("--one-insert", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    ap.add_argument("--one-memory", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], args.one[1], args.searches)))
        return 0
    if args.one_memory:
        print(json.dumps(run_memory(args.one_memory, args.searches, args.one_at_a_time)))
        return 0
    if args.one_insert:
        r = insert_rss(int(args.one_insert[0]), args.one_insert[1], int(args.one_insert[2]))
        print(json.dumps({"variant": "as shipped", **r}))
        return 0
    if args.insert_rss:
        rows = []
        for index_type in args.index.split(","):
            proc = subprocess.run([sys.executable, __file__, "--one-insert", str(args.insert_rss), index_type, str(args.per_call)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        return table(rows,
                     [("memtable", "variant", "{}"), ("index", "index", "{}"), ("rows", "rows", "{}"), ("per call", "per_call", "{}"),
                      ("insert s", "insert_s", "{:.2f}"), ("flush s", "flush_s", "{:.2f}"), ("search p50 ms", "search_p50_ms", "{:.1f}"),
                      ("their vectors MB", "vectors_mb", "{:.0f}"),
                      ("RSS grown MB", "grown_mb", "{:.0f}"), ("after release MB", "after_release_mb", "{:.0f}"),
                      ("peak grown MB", "peak_grown_mb", "{:.0f}"), ("Arrow live MB", "arrow_live_mb", "{:.0f}")])
    results = []
    runs = [["--one-memory", str(args.memories), *(["--one-at-a-time"] if args.one_at_a_time else [])]] if args.memories else [["--one", str(args.rows), d] for d in args.dims.split(",")]
    for run in runs:
        proc = subprocess.run([sys.executable, __file__, *run, "--searches", str(args.searches)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        results.append({"variant": "as shipped", **json.loads(proc.stdout.strip().splitlines()[-1])})
    if args.memories:
        cols = [("variant", "variant", "{}"), ("memories", "memories", "{}"), ("written by", "how", "{}"), ("writes s", "writes_s", "{:.1f}"),
                ("dense p50 ms, rows unflushed", "live_search_p50_ms", "{:.1f}"),
                ("dense p50 ms, reopened", "reopened_search_p50_ms", "{:.1f}"), ("peak RSS MB", "peak_rss_mb", "{:.0f}")]
        return table(results, cols)
    cols = [("variant", "variant", "{}"), ("dim", "dim", "{}"), ("unflushed", "rows", "{}"),
            ("search p50 ms", "search_p50_ms", "{:.1f}"), ("in a partition ms", "partition_search_p50_ms", "{:.1f}"),
            ("flush s", "flush_s", "{:.2f}"),
            ("peak RSS MB", "peak_rss_mb", "{:.0f}")]
    return table(results, cols)


def table(results: list[dict], cols: list[tuple[str, str, str]]) -> int:
    print(" | ".join(h for h, _, _ in cols))
    print(" | ".join("---" for _ in cols))
    for r in results:
        print(" | ".join(f.format(r[k]) for _, k, f in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
