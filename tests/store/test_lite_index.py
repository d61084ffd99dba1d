"""store/lite_index.py: a milvus-lite FLAT index opened on its segment's vectors (no second copy read from
its sidecar), searched exactly as before; other index types load as milvus-lite ships them."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from hippocampus.store import lite_index

DIM = 16


def _store(path: Path, index_type: str):
    from pymilvus import DataType as DT
    from pymilvus import MilvusClient

    lite_index.install()  # as store/connection.py does for a local path
    c = MilvusClient(str(path))
    if not c.has_collection("t"):
        s = c.create_schema(auto_id=False)
        s.add_field("id", DT.INT64, is_primary=True)
        s.add_field("user_id", DT.VARCHAR, max_length=32)
        s.add_field("v", DT.FLOAT_VECTOR, dim=DIM)
        index = c.prepare_index_params()
        index.add_index("v", index_type=index_type, metric_type="COSINE")
        c.create_collection("t", schema=s, index_params=index)
    c.load_collection("t")
    return c


def _close(c, path: Path) -> None:
    """Closed as a store closes: milvus-lite's in-process server for the path goes too, so the next
    client opens the collection from disk (segments and index sidecars read again)."""
    from milvus_lite.server_manager import server_manager_instance

    c.close()
    server_manager_instance.release_server(str(path))
    gc.collect()


def _segments_of(field: str = "v") -> list:
    from milvus_lite.storage.segment import Segment

    return [o for o in gc.get_objects() if type(o) is Segment and field in o.indexes]  # type(): no attribute lookups on other objects


def _exact(vecs: np.ndarray, users: list[str], q: np.ndarray, user: str, k: int) -> list[int]:
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    scores = unit @ (q / np.linalg.norm(q))
    keep = [i for i in np.argsort(-scores) if users[i] == user]
    return [int(i) for i in keep[:k]]


def test_a_reopened_flat_index_shares_the_segment_matrix_and_searches_exactly(tmp_path: Path) -> None:
    if not lite_index.install():
        pytest.skip("HIPPOCAMPUS_LITE_MEMTABLE=off: milvus-lite as it ships")
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, DIM)).astype(np.float32)
    users = [f"u{i % 4}" for i in range(300)]
    path = tmp_path / "m.db"
    c = _store(path, "FLAT")
    for start in (0, 150):  # two flushed segments
        c.insert("t", [{"id": i, "user_id": users[i], "v": vecs[i].tolist()} for i in range(start, start + 150)])
        c.flush("t")
    _close(c, path)
    sidecars = sorted(p.name for p in path.rglob("*") if p.is_file() and p.name.endswith(".flat.idx"))
    assert sidecars  # written at each build, as milvus-lite writes them

    c = _store(path, "FLAT")  # reopened: the indexes come from the segments, the sidecars stay as they were
    segs = [s for s in _segments_of() if s.indexes["v"].index_type == "BRUTE_FORCE"]
    assert len(segs) == len(sidecars) and all(np.shares_memory(s.indexes["v"]._vectors, s.vector_data("v")[0]) for s in segs)
    for q_at in range(0, 300, 37):
        q = vecs[q_at] + rng.normal(scale=0.3, size=DIM).astype(np.float32)
        for user in ("u0", "u3"):
            hits = c.search("t", data=[q.tolist()], anns_field="v", limit=5, filter=f'user_id == "{user}"')[0]
            assert [h["id"] for h in hits] == _exact(vecs, users, q, user, 5)
    for p in path.rglob("*"):  # sidecars lost: a reopen writes them again
        if p.is_file() and p.name.endswith(".flat.idx"):
            p.unlink()
    _close(c, path)
    c = _store(path, "FLAT")
    c.search("t", data=[vecs[0].tolist()], anns_field="v", limit=1)
    assert sorted(p.name for p in path.rglob("*") if p.is_file() and p.name.endswith(".flat.idx")) == sidecars
    _close(c, path)


def test_other_index_types_load_as_milvus_lite_ships_them(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    path = tmp_path / "h.db"
    c = _store(path, "HNSW")
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(200, DIM)).astype(np.float32)
    c.insert("t", [{"id": i, "user_id": "u", "v": vecs[i].tolist()} for i in range(200)])
    c.flush("t")
    _close(c, path)
    c = _store(path, "HNSW")
    assert c.search("t", data=[vecs[3].tolist()], anns_field="v", limit=1)[0][0]["id"] == 3
    assert {type(s.indexes["v"]).__name__ for s in _segments_of()} >= {"FaissHnswIndex"}
    _close(c, path)
