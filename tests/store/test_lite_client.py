"""The one store interface on its two backends (store/backend.StoreClient): store/lite_client.LiteClient (a
local path, milvus-lite's in-process API) answers every call the store makes as pymilvus' MilvusClient does
against `milvus-lite server` (the same engine behind gRPC): the same rows, search order and scores,
partitions, JSON filters, BM25 in English and Chinese, upserts and deletes, counts, query iterators, hybrid
fusion and refusals. Then the store's own properties (test_store_servers._core_properties) on a local path."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hippocampus import Memory
from hippocampus.store import filters as F
from hippocampus.store.backend import keyed, refused
from hippocampus.store.connection import create_indexed
from hippocampus.store.lite_client import LiteClient
from hippocampus.store.schema import history_schema, leases_schema, memories_schema
from hippocampus.testing import DeterministicEmbedder
from tests.store.test_store_servers import _LITE_MAIN, HOST, _core_properties, _free_port, _port_open, _server

DIM = 8
PARTS = ["u01", "u02"]
TEXTS = ["Alice keeps her locker code in a notebook", "Bob rides his bicycle to the office every morning",
         "The office coffee machine is broken again", "我住在上海，每天早上喝茶", "上海的地铁很方便",
         "Carol is learning to play the violin", "我的自行车是红色的", "Dave moved to Porto last spring"]


@pytest.fixture(scope="module")
def clients(tmp_path_factory) -> Iterator[tuple[Any, LiteClient]]:
    """pymilvus on `milvus-lite server` and a LiteClient on a local path, each holding the same collections."""
    from pymilvus import MilvusClient

    base = tmp_path_factory.mktemp("contract")
    port = _free_port()
    cmd = [sys.executable, "-c", _LITE_MAIN, "server", "--data-dir", str(base / "data"), "--host", HOST, "--port", str(port)]
    with _server(cmd, base / "server.log", lambda: _port_open(port), "milvus-lite server"):
        remote = MilvusClient(uri=f"http://{HOST}:{port}")
        local = LiteClient(str(base / "local.db"))
        try:
            for c in (remote, local):
                _fill(c)
            yield remote, local
        finally:
            remote.close()
            local.close()


def _rows(ids: list[int], rng: random.Random) -> list[dict[str, Any]]:
    return [{"id": i, "user_id": f"user{i % 3}", "memory_type": "episodic" if i % 2 else "semantic", "ts": 1000 + i,
             "chat_id": f"c{i % 4}", "who": "", "text": TEXTS[i % len(TEXTS)] + f" #{i}", "hit_count": i % 5,
             "vector": [rng.uniform(-1, 1) for _ in range(DIM)],
             "metadata": {"k": i % 4, "life": {"state": "active" if i % 3 else "superseded"}, "tags": ["a", str(i)]}}
            for i in ids]


def _fill(c: Any) -> None:
    """Flushed rows in two partitions, newer versions of some in the memtable, more rows, deletes."""
    rng = random.Random(7)
    schema, index = memories_schema(c, DIM, auto_id=False)
    create_indexed(c, "m", schema, index, properties={"hippocampus.schema_version": "5"})
    for p in PARTS:
        c.create_partition("m", p)
    c.insert("m", data=_rows(list(range(30)), rng), partition_name=PARTS[0])
    c.insert("m", data=_rows(list(range(30, 60)), rng), partition_name=PARTS[1])
    c.flush("m")
    c.upsert("m", data=_rows(list(range(6)), rng), partition_name=PARTS[0])
    c.insert("m", data=_rows(list(range(60, 75)), rng), partition_name=PARTS[1])
    c.delete("m", filter=F.in_("id", [3, 33, 61, 999]))
    c.delete("m", filter=F.and_(F.eq("user_id", "user2"), F.cmp("ts", ">", 1065)))
    schema, index = history_schema(c)
    create_indexed(c, "h", schema, index)
    c.insert("h", data=[{"memory_id": i, "user_id": "u", "action": "created", "at": i, "event": {"n": i, "s": "é\"x"},
                         "_v": [0.0, 0.0]} for i in range(12)])


def _both(clients: tuple[Any, LiteClient], method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    remote, local = clients
    return getattr(remote, method)(*args, **kwargs), getattr(local, method)(*args, **kwargs)


def _by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((dict(r) for r in rows), key=lambda r: r["id"])


FIELDS = ["id", "user_id", "memory_type", "ts", "chat_id", "text", "hit_count", "metadata", "vector"]
FILTERS = ["", F.eq("user_id", "user1"), F.in_("id", [1, 2, 3, 4, 40, 62]), 'metadata["k"] == 2',
           F.and_(F.eq("memory_type", "episodic"), 'metadata["life"]["state"] == "active"'),
           F.and_(F.in_("id", [5, 6, 7, 35]), F.eq("user_id", "user2")), 'json_contains(metadata["tags"], "37")',
           F.cmp("ts", ">=", 1050)]


@pytest.mark.parametrize("expr", FILTERS)
@pytest.mark.parametrize("parts", [None, [PARTS[1]]])
def test_query_gives_the_same_rows(clients, expr: str, parts: list[str] | None) -> None:
    remote, local = _both(clients, "query", "m", filter=expr or "id >= 0", output_fields=FIELDS, limit=1000,
                          partition_names=parts)
    assert _by_id(local) == _by_id(remote) and local


def test_counts_and_the_default_query_limit(clients) -> None:
    for expr, parts in [("", None), (F.eq("user_id", "user0"), None), ('metadata["k"] == 1', [PARTS[1]])]:
        remote, local = _both(clients, "query", "m", filter=expr, output_fields=["count(*)"], partition_names=parts)
        assert local == [{"count(*)": remote[0]["count(*)"]}], (expr, parts)
    # a count of a partition without a filter: milvus-lite's server counts the whole collection (it answers from
    # num_entities); the local client counts the partition, as a Milvus server does
    rows = clients[0].query("m", filter="id >= 0", output_fields=["id"], partition_names=[PARTS[0]])
    assert clients[1].query("m", filter="", output_fields=["count(*)"], partition_names=[PARTS[0]]) == [{"count(*)": len(rows)}]
    remote, local = _both(clients, "query", "m", filter="id >= 0", output_fields=["id"])
    assert _by_id(local) == _by_id(remote)


def test_query_iterators_page_through_the_same_rows(clients) -> None:
    for name, fields in (("m", ["id", "text", "metadata"]), ("h", ["id", "event"])):
        pages: dict[str, list[list[dict[str, Any]]]] = {}
        for label, c in zip(("remote", "local"), clients):
            it, got = c.query_iterator(name, batch_size=7, filter="", output_fields=fields), []
            while page := it.next():
                got.append(page)
            it.close()
            pages[label] = got
        flat = {k: _by_id([r for p in v for r in p]) for k, v in pages.items()}
        assert flat["local"] == flat["remote"] and len(flat["local"]) > 7, name
        assert all(len(p) <= 7 for p in pages["local"])


def _hits(res: list[list[Any]]) -> list[list[tuple[Any, float, dict[str, Any]]]]:
    return [[(h["id"], round(float(h["distance"]), 4), dict(h["entity"])) for h in hits] for hits in res]


@pytest.mark.parametrize("expr", ["", F.eq("user_id", "user1"), 'metadata["k"] <= 1'])
@pytest.mark.parametrize("parts", [None, [PARTS[0]]])
def test_dense_search_gives_the_same_hits_in_the_same_order(clients, expr: str, parts: list[str] | None) -> None:
    rng = random.Random(11)
    queries = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(2)]
    remote, local = _both(clients, "search", "m", data=queries, anns_field="vector", filter=expr, limit=6,
                          output_fields=["id", "text", "metadata"], search_params={"metric_type": "COSINE"},
                          partition_names=parts)
    assert _hits(local) == _hits(remote) and local[0]


@pytest.mark.parametrize("query", ["office coffee", "locker notebook", "上海 喝茶", "自行车", "nothing matches zzz"])
def test_bm25_search_in_english_and_chinese(clients, query: str) -> None:
    remote, local = _both(clients, "search", "m", data=[query], anns_field="sparse", filter="", limit=5,
                          output_fields=["text"], search_params={"metric_type": "BM25"})
    assert _hits(local) == _hits(remote)


@pytest.mark.parametrize("ranker", ["rrf", "weighted", "weighted-raw"])
def test_hybrid_search_fuses_as_the_server_does(clients, ranker: str) -> None:
    from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

    vec = [random.Random(5).uniform(-1, 1) for _ in range(DIM)]
    expr = F.eq("memory_type", "episodic")
    reqs = [AnnSearchRequest(data=[vec], anns_field="vector", param={"metric_type": "COSINE"}, limit=8, expr=expr),
            AnnSearchRequest(data=["office bicycle 上海"], anns_field="sparse", param={"metric_type": "BM25"}, limit=8, expr=expr)]
    fuse = {"rrf": RRFRanker(60), "weighted": WeightedRanker(0.7, 0.3), "weighted-raw": WeightedRanker(0.7, 0.3, norm_score=False)}[ranker]
    remote, local = _both(clients, "hybrid_search", "m", reqs, ranker=fuse, limit=5, output_fields=["text"])
    assert _hits(local) == _hits(remote) and local[0]


KEYED = [  # ids with the rest of a condition: some ids excluded by it, one id missing (999), one deleted (3)
    ([1, 2, 3, 4, 5, 40, 62, 999], F.eq("user_id", "user1")),
    ([0, 1, 2, 4, 5, 31, 32, 70, 999], 'metadata["life"]["state"] == "active"'),
    ([4, 5, 6, 7, 35, 36, 64], F.and_(F.eq("memory_type", "episodic"), F.cmp("ts", "<", 1060))),
    ([1, 2, 999], F.eq("user_id", "nobody")),
]


@pytest.mark.parametrize(("ids", "rest"), KEYED)
@pytest.mark.parametrize("parts", [None, [PARTS[1]]])
def test_ids_with_the_rest_of_a_condition_read_the_same_rows(clients, ids: list[int], rest: str,
                                                             parts: list[str] | None) -> None:
    """backend.keyed: the local client reads the ids by key and tests the rest; a server is given one
    expression `id in [...] and (rest)`. Both find what a filter finds, the same rows the remote reads."""
    remote, local = clients
    want = _by_id(remote.query("m", filter=F.and_(F.in_("id", ids), rest), output_fields=FIELDS, partition_names=parts))
    for c in (remote, local):
        got = c.query("m", **keyed(c, ids, rest), output_fields=FIELDS, partition_names=parts)
        assert _by_id(got) == want, type(c).__name__
    assert set(keyed(local, ids, rest)) == {"ids", "filter"} and set(keyed(remote, ids, rest)) == {"filter"}
    assert all(r["id"] in ids for r in want) and (want or rest == F.eq("user_id", "nobody"))
    assert len({r["id"] for r in want}) < len(ids)  # the rest, a missing id or the partition left some out


def test_reads_by_key_describe_and_indexes(clients) -> None:
    remote, local = _both(clients, "get", "m", ids=[1, 3, 40, 62, 999], output_fields=["id", "text", "metadata"])
    assert _by_id(local) == _by_id(remote)
    for parts in (None, [PARTS[1]]):
        remote, local = _both(clients, "query", "m", ids=[1, 3, 40, 62, 999], output_fields=["id", "vector"], partition_names=parts)
        assert _by_id(local) == _by_id(remote) and local
    remote, local = _both(clients, "describe_collection", "m")
    assert {f["name"]: (f.get("params", {}).get("dim"), f.get("is_primary", False)) for f in local["fields"]} == \
           {f["name"]: (f.get("params", {}).get("dim"), f.get("is_primary", False)) for f in remote["fields"]}
    assert local["properties"]["hippocampus.schema_version"] == remote["properties"]["hippocampus.schema_version"] == "5"
    assert local["auto_id"] == remote["auto_id"] is False
    assert sorted(clients[1].list_partitions("m")) == sorted(clients[0].list_partitions("m"))
    assert [clients[1].has_partition("m", p) for p in ("u01", "u63")] == [clients[0].has_partition("m", p) for p in ("u01", "u63")]
    assert _both(clients, "has_collection", "m") == (True, True) and _both(clients, "has_collection", "nope") == (False, False)
    assert sorted(clients[1].list_indexes("m")) == sorted(clients[0].list_indexes("m"))
    assert clients[1].describe_index("m", "vector")["state"] == "Finished"


def test_properties_rename_and_drop(clients) -> None:
    for c in clients:
        schema, index = leases_schema(c)
        create_indexed(c, "l1", schema, index)
        c.upsert("l1", data=[{"key": "a\"b", "grp": "g", "name": "n", "kind": "k", "owner": "o", "what": "w", "token": 1,
                              "claimed_at": 1, "expires_at": 2, "_v": [0.0, 0.0]}])
        c.alter_collection_properties("l1", {"p": "1"})
        c.release_collection("l1")
        c.rename_collection("l1", "l2")
        c.load_collection("l2")
    remote, local = _both(clients, "query", "l2", filter=F.eq("key", "a\"b"), output_fields=["key", "token"], limit=5)
    assert local == remote == [{"key": "a\"b", "token": 1}]
    assert _both(clients, "query", "l2", ids=["a\"b", "none"], output_fields=["token"]) == ([{"key": "a\"b", "token": 1}],) * 2
    assert clients[1].describe_collection("l2")["properties"]["p"] == "1" == clients[0].describe_collection("l2")["properties"]["p"]
    for c in clients:
        c.drop_collection("l2")
    assert _both(clients, "has_collection", "l2") == (False, False)


@pytest.mark.parametrize("call", [
    lambda c: c.query("nope", filter="id >= 0", output_fields=["id"], limit=1),
    lambda c: c.query("m", filter="id >>> 3", output_fields=["id"], limit=1),
    lambda c: c.query("m", filter="no_such_field == 3 and", output_fields=["id"], limit=1),
    lambda c: c.search("m", data=[[0.0] * (DIM + 1)], anns_field="vector", limit=1),
    lambda c: c.insert("m", data=[{"id": 500}], partition_name=PARTS[0]),
    lambda c: c.insert("m", data=_rows([501], random.Random(1)), partition_name="u99"),
])
def test_both_refuse_the_same_calls_as_backend_errors(clients, call) -> None:
    for c in clients:
        with pytest.raises(Exception) as caught:
            call(c)
        assert refused(caught.value), (type(caught.value), caught.value)


def test_a_local_store_holds_the_properties_every_server_holds(tmp_path: Path) -> None:
    with Memory(milvus_uri=str(tmp_path / "m.db"), embedder=DeterministicEmbedder()) as m:
        caps = m.store.capabilities
        assert (caps.engine, caps.full_text, caps.client_ids) == ("milvus-lite", True, False)
        assert isinstance(m.store.client, LiteClient)
        _core_properties(m)


def test_clients_of_one_path_share_its_engine_and_the_last_releases_its_lock(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    a, b = LiteClient(path), LiteClient(path)
    schema, index = history_schema(a)
    create_indexed(a, "h", schema, index)
    assert b.has_collection("h")
    a.close()
    assert b.query("h", filter="", output_fields=["count(*)"]) == [{"count(*)": 0}]
    b.close()
    with pytest.raises(Exception) as caught:
        b.query("h", filter="", output_fields=["id"])
    assert refused(caught.value)
    c = LiteClient(path)  # opens the directory afresh: the lock was released
    assert c.has_collection("h")
    c.close()


def test_numpy_vectors_are_written_and_searched_as_pymilvus_sends_them(clients) -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    for c in clients:
        schema, index = history_schema(c)
        create_indexed(c, "n", schema, index)
        rows = [{"memory_id": i, "user_id": "u", "action": "created", "at": i, "event": {"n": i},
                 "_v": rng.standard_normal(2).astype(np.float32) if i % 2 else [np.float32(0.5), np.float64(i)]} for i in range(6)]
        c.insert("n", data=rows)
        rng = np.random.default_rng(3)  # the same rows for the other client
    query = [np.array([0.3, -0.2], dtype=np.float32)]
    remote, local = _both(clients, "search", "n", data=query, anns_field="_v", limit=4, output_fields=["memory_id", "_v"],
                          search_params={"metric_type": "L2"})
    assert [[(h["entity"]["memory_id"], round(h["distance"], 4), h["entity"]["_v"]) for h in hits] for hits in local] == \
           [[(h["entity"]["memory_id"], round(h["distance"], 4), h["entity"]["_v"]) for h in hits] for hits in remote]
