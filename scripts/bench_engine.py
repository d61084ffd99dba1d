#!/usr/bin/env python
"""Which milvus-lite layout and version answers a user-filtered search fastest?

A raw pymilvus probe, independent of Hippocampus, so that it runs unchanged under milvus-lite 3.x
(pure Python, in-process) and 2.5 (C++ engine in a child process) in two virtual environments:

    python scripts/bench_engine.py --rows 100000                  # the project's venv (3.x)
    python -m venv /tmp/ml25 && /tmp/ml25/bin/pip install "milvus-lite==2.5.1" "pymilvus==2.5.18" \\
        numpy "setuptools<70" && /tmp/ml25/bin/python scripts/bench_engine.py --rows 100000

Random unit vectors (384-d), `--users` users, top 10 with the filter user_id == "...". Layouts:
`flat` (one partition), `partition_key` (user_id as Milvus' partition key, 64 partitions),
`buckets` (64 partitions by crc32(user_id), the search names the user's
partition: what the project's store does), each after a flush. The floor is numpy over the same
vectors with the same user mask. Prints a table; `--json` writes it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient

DIM = 384
BUCKETS = 64


def bucket(user: str) -> str:
    return f"b{zlib.crc32(user.encode()) % BUCKETS}"


def build(client: MilvusClient, name: str, layout: str, vectors: np.ndarray, owners: np.ndarray) -> float:
    schema = client.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("user_id", DataType.VARCHAR, max_length=128, is_partition_key=layout == "partition_key")
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="COSINE")
    extra = {"num_partitions": BUCKETS} if layout == "partition_key" else {}
    client.create_collection(name, schema=schema, index_params=index, **extra)
    if layout == "buckets":
        for b in range(BUCKETS):
            client.create_partition(name, f"b{b}")
    t0 = time.perf_counter()
    rows = [{"user_id": f"user-{u}", "vector": v.tolist()} for u, v in zip(owners, vectors)]
    if layout == "buckets":
        by_part: dict[str, list[dict]] = {}
        for r in rows:
            by_part.setdefault(bucket(r["user_id"]), []).append(r)
        for part, chunk in by_part.items():
            for i in range(0, len(chunk), 5000):
                client.insert(name, chunk[i : i + 5000], partition_name=part)
    else:
        for i in range(0, len(rows), 5000):
            client.insert(name, rows[i : i + 5000])
    client.flush(name)
    client.load_collection(name)
    return len(rows) / (time.perf_counter() - t0)


def stop_engine(path: str) -> None:
    """Stop milvus-lite's engine for `path` before its folder goes. Why: `client.close()` closes the
    connection only; milvus-lite 3.x keeps serving the path in this process, and its background worker
    (compaction and index build after a flush) goes on writing under `partitions/` while the temporary
    folder is removed ("Directory not empty: 'partitions'"). Releasing the server closes the database,
    which waits for that worker. Through milvus-lite's module API, the one pymilvus starts it with;
    an engine without it (2.5's child process ends with the client) has nothing to stop."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:  # pragma: no cover - a Milvus without the lite package
        return
    release = getattr(server_manager_instance, "release_server", None)
    if release is not None:
        release(path)


def floor_latencies(vectors: np.ndarray, owners: np.ndarray, queries: np.ndarray, users: np.ndarray, k: int = 10) -> list[float]:
    """Seconds per query of the numpy floor: one full matrix product, the user's mask, top k.
    Run it in its own loop: its BLAS threads keep spinning afterwards and slow whatever comes next."""
    out = []
    for v, u in zip(queries, users):
        t0 = time.perf_counter()
        sims = vectors @ v
        sims[owners != u] = -np.inf
        top = np.argpartition(-sims, k)[:k]
        top[np.argsort(-sims[top])]
        out.append(time.perf_counter() - t0)
    return out


def measure(client: MilvusClient, name: str, layout: str, vectors: np.ndarray, owners: np.ndarray,
            qv: np.ndarray, qu: np.ndarray) -> dict:
    rate = build(client, name, layout, vectors, owners)
    lat, short = [], 0
    for v, u in zip(qv, qu):
        user = f"user-{u}"
        kw = {"partition_names": [bucket(user)]} if layout == "buckets" else {}
        t0 = time.perf_counter()
        res = client.search(name, [v.tolist()], anns_field="vector", filter=f'user_id == "{user}"',
                            limit=10, output_fields=["user_id"], **kw)
        lat.append(time.perf_counter() - t0)
        short += len(res[0]) < 10
    return {"insert_rows_per_s": rate, "p50_ms": 1000 * statistics.median(lat),
            "p99_ms": 1000 * sorted(lat)[int(0.99 * (len(lat) - 1))], "short_results": short}


def run(rows: int, users: int, queries: int) -> list[dict]:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    owners = rng.integers(users, size=rows)
    qv = rng.normal(size=(queries, DIM)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    qu = rng.integers(users, size=queries)
    out = []
    with tempfile.TemporaryDirectory(prefix="engine-") as tmp:
        path = str(Path(tmp) / "bench.db")
        client = MilvusClient(path)
        for layout in ("flat", "partition_key", "buckets"):
            name = f"m_{layout}"
            try:
                out.append({"layout": layout, **measure(client, name, layout, vectors, owners, qv, qu)})
                print(f"  {layout}: done", file=sys.stderr)
            except Exception as exc:  # milvus-lite 2.5: partitions UNIMPLEMENTED, partition-key filter refused
                out.append({"layout": layout, "error": " ".join(f"{type(exc).__name__}: {exc}".split())[:120]})
                print(f"  {layout}: not supported", file=sys.stderr)
        client.close()
        stop_engine(path)
    f50 = 1000 * statistics.median(floor_latencies(vectors, owners, qv, qu))
    for r in out:
        r["floor_p50_ms"] = f50
        if "p50_ms" in r:
            r["ratio"] = r["p50_ms"] / f50
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    try:
        from importlib.metadata import version
        engine = f"milvus-lite {version('milvus-lite')}, pymilvus {version('pymilvus')}"
    except Exception:  # pragma: no cover - metadata missing
        engine = "milvus-lite (version unknown)"
    results = run(args.rows, args.users, args.queries)
    print(f"{engine}; {args.rows} rows, {args.users} users, {args.queries} queries, top 10, user filter")
    print("| layout | insert rows/s | p50 ms | p99 ms | floor p50 ms | ratio | short results |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['layout']} | not supported: {r['error']} | | | | | |")
            continue
        print(f"| {r['layout']} | {r['insert_rows_per_s']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
              f"{r['floor_p50_ms']:.2f} | {r['ratio']:.1f}x | {r['short_results']} |")
    if args.json:
        args.json.write_text(json.dumps({"engine": engine, "rows": args.rows, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
