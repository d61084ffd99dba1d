"""store/lite_direct.py: a local store's queries answered by milvus-lite's engine in this process give the
rows pymilvus gives through milvus-lite's gRPC server, and anything it does not map goes through pymilvus."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hippocampus.errors import StoreError
from hippocampus.store import MilvusStore
from hippocampus.store import filters as F
from hippocampus.store.lite_direct import split_ids

DIM = 8
PARTS = ["p0", "p1", "p2"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> MilvusStore:
    """A store with a second collection of every kind of field, written in several partitions: flushed rows,
    rows still in the memtable, upserts over both and deletes."""
    from pymilvus import DataType as DT

    s = MilvusStore(str(tmp_path_factory.mktemp("direct") / "m.db"), dim=DIM, embedding_model="test")
    c = s.client
    schema = c.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DT.INT64, is_primary=True)
    schema.add_field("user_id", DT.VARCHAR, max_length=32)
    schema.add_field("meta", DT.JSON, nullable=True)
    schema.add_field("flag", DT.BOOL)
    schema.add_field("score", DT.FLOAT)
    schema.add_field("v", DT.FLOAT_VECTOR, dim=DIM)
    index = c.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="COSINE")
    c.create_collection("t", schema=schema, index_params=index)
    for p in PARTS:
        c.create_partition("t", p)
    rng = random.Random(3)

    def rows(ids: list[int]) -> list[dict]:
        return [{"id": i, "user_id": f"u{rng.randint(0, 2)}", "flag": rng.random() < 0.5, "score": rng.random() / 3,
                 "meta": None if rng.random() < 0.2 else {"k": rng.randint(0, 5), "nested": {"s": "é\"x"}, "l": [1, "2", None]},
                 "v": [rng.uniform(-1, 1) for _ in range(DIM)], "extra": rng.randint(0, 9)} for i in ids]

    for p, ids in zip(PARTS, ([*range(40)], [*range(40, 80)], [*range(80, 100)])):
        c.insert("t", rows(ids), partition_name=p)
    c.flush("t")  # flushed segments ...
    c.upsert("t", rows([*range(10)]), partition_name="p0")  # ... newer versions in the memtable
    c.insert("t", rows([*range(100, 130)]), partition_name="p1")
    c.delete("t", filter=F.in_("id", [5, 45, 105, 999]))
    c.load_collection("t")
    yield s
    s.close()


def _both(s: MilvusStore, expr: str, fields: list[str], limit: int, parts: list[str] | None = None) -> tuple[list, list]:
    direct = s._direct.query("t", expr, fields, limit, parts)
    assert direct is not None, (expr, fields)
    return direct, list(s.client.query("t", filter=expr, output_fields=fields, limit=limit, partition_names=parts))


EXPRESSIONS = [
    F.in_("id", [3, 5, 7, 12, 44, 45, 101, 105, 999]),  # memtable, flushed, upserted, deleted, absent
    F.and_(F.in_("id", [*range(0, 130, 3)]), F.eq("user_id", "u1")),
    F.and_(F.in_("id", [*range(0, 130, 2)]), F.eq("user_id", "u0"), F.json_eq("meta", "k", 3)),
    F.and_(F.in_("id", [8, 1, 6]), 'meta["nested"]["s"] == "é\\"x"'),
    F.eq("user_id", "u2"),
    F.and_(F.eq("user_id", "u0"), "flag == true"),
    "id > 90",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
@pytest.mark.parametrize("parts", [None, ["p0"], ["p1", "p2"], ["nowhere"]])
def test_the_engine_answers_what_pymilvus_answers(store: MilvusStore, expr: str, parts: list[str] | None) -> None:
    for fields in (["id", "user_id", "meta", "flag", "v"], ["id"], ["user_id", "meta"]):
        for limit in (200, 7):
            direct, through = _both(store, expr, fields, limit, parts)
            if limit >= 200 or split_ids(expr) is not None:  # else which rows fill a short page is the scan's
                assert sorted(direct, key=lambda r: r["id"]) == sorted(through, key=lambda r: r["id"])
            assert len(direct) == len(through)
            assert {k for r in direct for k in r} <= {*fields, "id"}


def test_rows_are_fresh_objects(store: MilvusStore) -> None:
    """The engine's values are its own: changing a returned row does not change the store."""
    expr = F.in_("id", [11, 12])
    first = store._direct.query("t", expr, ["id", "meta", "v"], 10)
    for row in first:
        row["v"][0] = 99.0
        if row["meta"] is not None:
            row["meta"]["k"] = "changed"
    assert store._direct.query("t", expr, ["id", "meta", "v"], 10) == list(store.client.query("t", filter=expr, output_fields=["id", "meta", "v"], limit=10))


def test_what_it_does_not_map_goes_through_pymilvus(store: MilvusStore) -> None:
    d = store._direct
    assert d.query("t", F.in_("id", [1]), ["id", "score"], 5) is None  # FLOAT: pymilvus returns the float32 it was sent
    assert d.query("t", F.in_("id", [1]), ["id", "extra"], 5) is None  # a dynamic field
    assert d.query("t", "no such field == 1", ["id"], 5) is None  # the engine refuses: pymilvus raises it
    assert d.query("absent", "", ["id"], 5) is None
    calls = []
    real = store.client.query
    store.client.query = lambda *a, **k: calls.append(k) or real(*a, **k)  # type: ignore[method-assign]
    try:
        assert store._call("query", "t", filter=F.in_("id", [1]), output_fields=["id", "user_id"], limit=5)
        assert not calls  # answered by the engine
        store._call("query", "t", filter=F.in_("id", [1]), output_fields=["id", "score"], limit=5)
        store._call("query", "t", filter="", output_fields=["count(*)"])
        assert len(calls) == 2
        with pytest.raises(StoreError):
            store._call("query", "t", filter="nonsense ==", output_fields=["id"], limit=5)
    finally:
        store.client.query = real  # type: ignore[method-assign]


def test_switched_off_and_on_a_closed_store(store: MilvusStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_LITE_DIRECT", "off")
    assert store._direct.query("t", F.in_("id", [1]), ["id"], 5) is None
    monkeypatch.delenv("HIPPOCAMPUS_LITE_DIRECT")
    other = MilvusStore(str(tmp_path / "o.db"), dim=DIM, embedding_model="test")
    direct = other._direct
    assert direct.query(other.collection, "", ["id"], 5) == []
    other.close()
    assert direct.query(other.collection, "", ["id"], 5) is None  # its engine is gone with the store


def test_split_ids() -> None:
    assert split_ids(F.in_("id", [1, -2, 30])) == ([1, -2, 30], "")
    assert split_ids(F.and_(F.in_("id", [4]), F.eq("user_id", "a"), F.eq("memory_type", "b"))) == (
        [4], f'({F.eq("user_id", "a")}) and ({F.eq("memory_type", "b")})')
    assert split_ids(F.and_(F.eq("user_id", "a"), F.in_("id", [4]))) is None  # only the form filters.py writes first
    assert split_ids(F.or_(F.in_("id", [4]), F.eq("user_id", "a"))) is None
    assert split_ids('(id in [4]) and (a == 1) or (b == 2)') is None  # `or` binds last: not the ids' rows alone
    assert split_ids('(id in [4]) and (a == " or ") and (b == 2)') == ([4], '(a == " or ") and (b == 2)')
    assert split_ids('id in ["4"]') is None and split_ids("id in []") is None and split_ids("false") is None


def _hits(res) -> list[list[dict]]:
    return [[{"id": h["id"], "distance": h["distance"], "entity": dict(h.get("entity") or {})} for h in hits] for hits in res]


@pytest.mark.parametrize("expr", [e for e in EXPRESSIONS if "u" in e or "id in" in e][:4] + [""])
@pytest.mark.parametrize("parts", [None, ["p1", "p2"]])
def test_the_engine_searches_as_pymilvus_searches(store: MilvusStore, expr: str, parts: list[str] | None) -> None:
    rng = random.Random(len(expr))
    queries = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(2)]
    for fields in (["id", "user_id", "meta", "v"], ["user_id"], ["id"]):
        for limit in (3, 50):
            direct = store._direct.search("t", queries, "v", limit, expr, fields, "COSINE", parts)
            through = store.client.search("t", data=queries, anns_field="v", limit=limit, filter=expr, output_fields=fields,
                                          search_params={"metric_type": "COSINE"}, partition_names=parts)
            assert direct == _hits(through)


def test_a_search_it_does_not_map_goes_through_pymilvus(store: MilvusStore) -> None:
    d, q = store._direct, [[0.5] * DIM]
    assert d.search("t", q, "v", 5, "", ["score"], "COSINE", None) is None  # a FLOAT output field
    assert d.search("t", q, "v", 5, "", [], "COSINE", None) is None  # none named: pymilvus returns every field
    assert d.search("t", q, "user_id", 5, "", ["id"], "COSINE", None) is None  # not a dense vector field
    assert d.search("t", q, "v", 5, "nonsense ==", ["id"], "COSINE", None) is None
    with pytest.raises(StoreError):
        store._call("search", "t", data=q, anns_field="v", limit=5, filter="nonsense ==", output_fields=["id"],
                    search_params={"metric_type": "COSINE"})
    hits = store._call("search", "t", data=q, anns_field="v", limit=5, filter="", output_fields=["id"],
                       search_params={"metric_type": "COSINE"})
    assert [h["id"] for h in hits[0]] == [h["id"] for h in store.client.search("t", data=q, anns_field="v", limit=5,
                                                                             output_fields=["id"])[0]]


def test_a_search_naming_no_field_searches_the_one_vector_field(store: MilvusStore, tmp_path: Path) -> None:
    from pymilvus import DataType as DT

    c = store.client
    schema = c.create_schema(auto_id=False)
    schema.add_field("id", DT.INT64, is_primary=True)
    schema.add_field("w", DT.FLOAT_VECTOR, dim=DIM)
    index = c.prepare_index_params()
    index.add_index("w", index_type="FLAT", metric_type="COSINE")
    c.create_collection("one", schema=schema, index_params=index)
    c.insert("one", [{"id": i, "w": [float(i + k) for k in range(DIM)]} for i in range(5)])
    c.load_collection("one")
    q = [[1.0] * DIM]
    assert store._direct.search("one", q, None, 3, "", ["id"], None) == _hits(c.search("one", data=q, limit=3, output_fields=["id"]))
    # the memories collection has two (e5's and BM25's sparse one): which one is pymilvus' to say
    assert store._direct.search(store.collection, [[1.0] * DIM], None, 3, "", ["id"], None) is None


def test_a_bm25_search_by_text_is_the_engine_s_too(store: MilvusStore) -> None:
    """The memories' BM25 field, searched by text (English, Chinese, words no memory has), with and without a
    user's filter and bucket: the hits pymilvus gets, in its order, with the same scores."""
    from hippocampus.store import MEMORY_FIELDS

    texts = ["alice moved to lisbon last spring", "bob plays the violin in lisbon", "我们计划去北京旅行",
             "我对花生过敏", "alice likes the violin more than the piano", "the weather in lisbon is mild"]
    rng = random.Random(9)
    store.insert([{"user_id": f"u{i % 2}", "memory_type": "episodic", "ts": 1_700_000_000 + i, "chat_id": "c", "who": "u",
                   "text": t, "vector": [rng.uniform(-1, 1) for _ in range(DIM)], "hit_count": 0, "metadata": {"i": i}}
                  for i, t in enumerate(texts)])
    for query in ("lisbon violin", "北京旅行", "过敏", "nothing matches this"):
        for expr, part in (("", None), (F.eq("user_id", "u0"), store.partition_for("u0"))):
            direct = store._direct.search(store.collection, [query], "sparse", 5, expr, MEMORY_FIELDS, "BM25", _parts(part))
            through = store.client.search(store.collection, data=[query], anns_field="sparse", limit=5, filter=expr,
                                          output_fields=MEMORY_FIELDS, search_params={"metric_type": "BM25"},
                                          partition_names=_parts(part))
            assert direct == _hits(through)
            assert direct[0] or expr or query == "nothing matches this"  # every query but the last finds a memory
    assert store._direct.search(store.collection, [[0.1] * DIM], "sparse", 5, "", ["id"], "BM25") is None  # not text


def _parts(part: str | None) -> list[str] | None:
    return [part] if part else None
