"""store/lite_memtable.py: milvus-lite's memtable read column by column gives what its own methods give."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("milvus_lite")
from milvus_lite.schema.arrow_builder import build_wal_data_schema, build_wal_delta_schema  # noqa: E402
from milvus_lite.schema.types import CollectionSchema, DataType, FieldSchema  # noqa: E402
from milvus_lite.storage.memtable import MemTable  # noqa: E402

from hippocampus.store import lite_memtable  # noqa: E402

PARTS = ["_default", "u01", "u02", "u03"]
DIM = 6


def schema(nullable_vector: bool = False) -> CollectionSchema:
    return CollectionSchema(fields=[
        FieldSchema("id", DataType.INT64, is_primary=True),
        FieldSchema("user_id", DataType.VARCHAR, max_length=64),
        FieldSchema("meta", DataType.JSON, nullable=True),
        FieldSchema("score", DataType.FLOAT, nullable=True),
        FieldSchema("tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=4, nullable=True),
        FieldSchema("sparse", DataType.SPARSE_FLOAT_VECTOR, nullable=True),
        FieldSchema("v", DataType.FLOAT_VECTOR, dim=DIM, nullable=nullable_vector),
    ], enable_dynamic_field=True)


def random_table(rng: random.Random, nullable_vector: bool = False, null_vectors: bool = False, mixed: bool = False,
                 batches: int = 8) -> MemTable:
    """A memtable after random inserts (repeated ids: upserts), deletes, in several partitions; `mixed`: some
    batches hold rows of several partitions (milvus-lite writes one partition a batch, the code must not rely on it)."""
    s = schema(nullable_vector)
    mt, seq = MemTable(s), 0
    wal, delta = build_wal_data_schema(s), build_wal_delta_schema(s)
    for _ in range(rng.randint(1, batches)):
        seq += 1
        if rng.random() < 0.25:
            ids = [rng.randint(0, 40) for _ in range(rng.randint(1, 6))]
            mt.apply_delete(pa.RecordBatch.from_pydict({"id": ids, "_seq": [seq] * len(ids), "_partition": [rng.choice(PARTS)] * len(ids)},
                                                       schema=delta))
            continue
        n = rng.randint(1, 12)
        part = rng.choice(PARTS)
        mt.apply_insert(pa.RecordBatch.from_pydict({
            "_seq": [seq] * n, "_partition": [rng.choice(PARTS) if mixed and rng.random() < 0.5 else part for _ in range(n)], "id": [rng.randint(0, 40) for _ in range(n)],
            "user_id": [f"user-{rng.randint(0, 3)}" for _ in range(n)],
            "meta": [None if rng.random() < 0.3 else json.dumps({"k": rng.random()}) for _ in range(n)],
            "score": [None if rng.random() < 0.3 else rng.random() for _ in range(n)],
            "tags": [None if rng.random() < 0.3 else ["a", "b"][: rng.randint(0, 2)] for _ in range(n)],
            "sparse": [None if rng.random() < 0.5 else bytes(rng.randrange(256) for _ in range(8)) for _ in range(n)],
            "v": [None if null_vectors and rng.random() < 0.3 else [rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(n)],
            "$meta": [None if rng.random() < 0.5 else json.dumps({"extra": rng.randint(0, 9)}) for _ in range(n)],
        }, schema=wal))
    return mt


def both(mt: MemTable, method: str, *args):
    return getattr(lite_memtable, {"to_search_snapshot": "to_search_snapshot", "_build_data_table": "build_data_table"}[method])(mt, *args), \
        lite_memtable.ORIGINAL[method](mt, *args)


@pytest.fixture(scope="module", autouse=True)
def installed():
    assert lite_memtable.install(), "written against milvus-lite 3.x, which the project installs"
    assert MemTable.to_search_snapshot is lite_memtable.to_search_snapshot


@pytest.mark.parametrize("seed", range(60))
def test_search_snapshot_is_milvus_lites(seed: int) -> None:
    rng = random.Random(seed)
    mt = random_table(rng, nullable_vector=seed % 3 == 0, null_vectors=seed % 6 == 0, mixed=seed % 4 == 1,
                      batches=60 if seed % 10 == 7 else 8)  # sometimes more batches than the code combines at once
    for parts in (None, ["u01"], ["u02", "_default"], ["nowhere"]):
        for field in ("v", None):
            for table in (False, True):
                (pks, seqs, vecs, refs, tab), (pks0, seqs0, vecs0, refs0, tab0) = both(mt, "to_search_snapshot", field, parts, table)
                assert pks == pks0 and refs == refs0
                assert seqs.dtype == seqs0.dtype and np.array_equal(seqs, seqs0)
                assert vecs.dtype == vecs0.dtype and vecs.shape == vecs0.shape and np.array_equal(vecs, vecs0)
                assert (tab is None) == (tab0 is None)
                if tab is not None:
                    assert tab.schema.names == tab0.schema.names and tab.to_pylist() == tab0.to_pylist()


@pytest.mark.parametrize("seed", range(40))
def test_flush_tables_are_milvus_lites(seed: int) -> None:
    """_build_data_table, through MemTable.flush as milvus-lite calls it: the same tables, row for row."""
    mt = random_table(random.Random(1000 + seed), nullable_vector=seed % 2 == 0)
    new = mt.flush(known_partitions=PARTS)
    MemTable._build_data_table = lite_memtable.ORIGINAL["_build_data_table"]
    try:
        old = mt.flush(known_partitions=PARTS)
    finally:
        MemTable._build_data_table = lite_memtable.build_data_table
    assert new.keys() == old.keys()
    for part, (data, deltas) in new.items():
        data0, deltas0 = old[part]
        assert (data is None) == (data0 is None)
        if data is not None:
            assert data.schema == data0.schema and data.equals(data0)
        assert (deltas is None) == (deltas0 is None) or deltas.equals(deltas0)


def test_empty_and_fallback_paths() -> None:
    mt = MemTable(schema())
    pks, seqs, vecs, refs, tab = mt.to_search_snapshot("v", None, True)
    assert pks == [] and refs == [] and vecs.shape == (0, 0) and tab.num_rows == 0
    assert lite_memtable._vector_block(pa.array([[1.0, None]], type=pa.list_(pa.float32(), 2))) is None  # a null inside
    assert lite_memtable._vector_block(pa.array([b"x"])) is None  # not a float list: milvus-lite's own path
    block = lite_memtable._vector_block(pa.array([[1.0, 2.0], [3.0, 4.0]], type=pa.list_(pa.float32(), 2)).slice(1))
    assert block.tolist() == [[3.0, 4.0]]  # a sliced column starts where the slice does


def test_a_store_searches_its_unflushed_rows(tmp_path) -> None:
    """Through pymilvus on a local store: rows still in the memtable are found, in and out of partitions."""
    from pymilvus import DataType as DT
    from pymilvus import MilvusClient

    c = MilvusClient(str(tmp_path / "m.db"))
    s = c.create_schema(auto_id=False)
    s.add_field("id", DT.INT64, is_primary=True)
    s.add_field("user_id", DT.VARCHAR, max_length=32)
    s.add_field("v", DT.FLOAT_VECTOR, dim=DIM)
    index = c.prepare_index_params()
    index.add_index("v", index_type="AUTOINDEX", metric_type="COSINE")
    c.create_collection("t", schema=s, index_params=index)
    c.create_partition("t", "p1")
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(30, DIM)).astype(np.float32)
    c.insert("t", [{"id": i, "user_id": f"u{i % 3}", "v": vecs[i].tolist()} for i in range(20)])
    c.insert("t", [{"id": i, "user_id": f"u{i % 3}", "v": vecs[i].tolist()} for i in range(20, 30)], partition_name="p1")
    c.upsert("t", [{"id": 4, "user_id": "u1", "v": vecs[25].tolist()}])
    c.delete("t", ids=[7])
    hits = c.search("t", data=[vecs[25].tolist()], anns_field="v", limit=3, filter='user_id == "u1"', output_fields=["id"])[0]
    assert {h["id"] for h in hits[:2]} == {4, 25} and hits[0]["distance"] == pytest.approx(1.0, abs=1e-5)
    assert [h["id"] for h in c.search("t", data=[vecs[7].tolist()], anns_field="v", limit=30)[0]].count(7) == 0
    only = c.search("t", data=[vecs[21].tolist()], anns_field="v", limit=30, partition_names=["p1"])[0]
    assert {h["id"] for h in only} == set(range(20, 30))
    c.close()
