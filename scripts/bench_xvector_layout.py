"""Why the cross-language vectors live in a companion collection (store/xvector.py): milvus-lite's search
times for a memories-like collection without and with a second 512-d vector field, and for a slim
companion holding only that vector, with pymilvus alone (no Hippocampus code on the path).

    python scripts/bench_xvector_layout.py --rows 10000

Three collections of `--rows` random rows each, in one milvus-lite store with Hippocampus' memtable
budget (8 MB, store/connection.py): "memories" (ids, user, kind, analysed text with BM25, a 384-d vector,
JSON metadata), "with field" (the same plus `xvector`, 512-d, schema version 4's layout), "companion"
(ids, user, kind, `xvector`). Prints the median of `--repeat` calls of each search, user-filtered as the
store's are.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES", str(8 << 20))  # as store/connection.py sets it

import numpy as np  # noqa: E402
from pymilvus import DataType, Function, FunctionType, MilvusClient  # noqa: E402

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()
FILTER = 'user_id == "mei" and memory_type == "episodic"'


def make(c: MilvusClient, name: str, memories: bool, xvector: bool) -> None:
    s = c.create_schema(auto_id=False)
    s.add_field("id", DataType.INT64, is_primary=True)
    s.add_field("user_id", DataType.VARCHAR, max_length=64)
    s.add_field("memory_type", DataType.VARCHAR, max_length=32)
    ip = c.prepare_index_params()
    if memories:
        s.add_field("text", DataType.VARCHAR, max_length=2000, enable_analyzer=True)
        s.add_field("vector", DataType.FLOAT_VECTOR, dim=384)
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        s.add_field("metadata", DataType.JSON)
        s.add_function(Function(name="bm25", function_type=FunctionType.BM25, input_field_names=["text"], output_field_names=["sparse"]))
        ip.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
        ip.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    if xvector:
        s.add_field("xvector", DataType.FLOAT_VECTOR, dim=512)
        ip.add_index("xvector", index_type="AUTOINDEX", metric_type="COSINE")
    c.create_collection(name, schema=s, index_params=ip)


def fill(c: MilvusClient, name: str, rows: int, memories: bool, xvector: bool, rng: np.random.Generator) -> float:
    t0 = time.perf_counter()
    for start in range(0, rows, 100):
        batch: list[dict[str, Any]] = []
        for i in range(start, min(start + 100, rows)):
            r: dict[str, Any] = {"id": i + 1, "user_id": "mei", "memory_type": "episodic"}
            if memories:
                r.update(text=" ".join(random.choices(WORDS, k=8)), vector=rng.standard_normal(384).tolist(), metadata={"k": 1})
            if xvector:
                r["xvector"] = rng.standard_normal(512).tolist()
            batch.append(r)
        c.insert(name, batch)
    return rows / (time.perf_counter() - t0)


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    random.seed(0)
    rng = np.random.default_rng(0)
    c = MilvusClient(tempfile.mkdtemp(prefix="xvector-layout-") + "/bench.db")
    layouts = {"memories": (True, False), "with field": (True, True), "companion": (False, True)}
    rate = {}
    for name, (memories, xvector) in layouts.items():
        key = name.replace(" ", "_")
        make(c, key, memories, xvector)
        rate[name] = fill(c, key, args.rows, memories, xvector, rng)
    q, qx = rng.standard_normal(384).tolist(), rng.standard_normal(512).tolist()
    out = ["id", "text", "vector"]

    def bm25(key: str) -> Callable[[], Any]:
        return lambda: c.search(key, data=["alpha beta"], anns_field="sparse", filter=FILTER, limit=30, output_fields=out,
                                search_params={"metric_type": "BM25"})

    def dense(key: str) -> Callable[[], Any]:
        return lambda: c.search(key, data=[q], anns_field="vector", filter=FILTER, limit=30, output_fields=out,
                                search_params={"metric_type": "COSINE"})

    def cross(key: str, fields: list[str]) -> Callable[[], Any]:
        return lambda: c.search(key, data=[qx], anns_field="xvector", filter=FILTER, limit=40, output_fields=fields,
                                search_params={"metric_type": "COSINE"})

    rows = [
        ("memories", f"{rate['memories']:.0f}", median_ms(bm25("memories"), args.repeat), median_ms(dense("memories"), args.repeat), None),
        ("with field", f"{rate['with field']:.0f}", median_ms(bm25("with_field"), args.repeat), median_ms(dense("with_field"), args.repeat),
         median_ms(cross("with_field", out), args.repeat)),
        ("companion", f"{rate['companion']:.0f}", None, None, median_ms(cross("companion", ["id"]), args.repeat)),
    ]
    print(f"milvus-lite, {args.rows:,} rows per collection, median of {args.repeat} calls (ms)")
    print(f"{'collection':12} {'insert/s':>9} {'bm25':>8} {'dense':>8} {'xvector':>8}")
    for name, ins, b, d, x in rows:
        cells = [f"{v:8.1f}" if v is not None else f"{'-':>8}" for v in (b, d, x)]
        print(f"{name:12} {ins:>9} {' '.join(cells)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
