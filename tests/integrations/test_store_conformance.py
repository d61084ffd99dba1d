"""A LangGraph store conformance suite of our own, written from LangGraph's documented BaseStore
contract (get/put/delete, batch order, search with filters and pages, list_namespaces with its
conditions, the `index` configuration with `embed` and `fields`, per-put `index`, cosine scores),
run against HippocampusStore (prefix=(), so any namespace is (user, *rest)) and against LangGraph's
own InMemoryStore, so the suite itself is checked by the reference. Then what only Hippocampus adds
or must keep: the default index's score a real cosine, another store object over the same memory,
TTL reads, and a large batch done in bulk."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from hippocampus import Memory
from hippocampus.integrations.langgraph import HippocampusStore
from hippocampus.models import now_ts
from hippocampus.testing import DeterministicEmbedder

DIMS = 64


def letters(text: str) -> list[float]:
    """A deterministic embedding of our own: hashed character bigrams, unit length."""
    vec = np.zeros(DIMS)
    padded = f" {text.lower()} "
    for a, b in zip(padded, padded[1:]):
        vec[int(hashlib.md5((a + b).encode()).hexdigest(), 16) % DIMS] += 1.0
    norm = np.linalg.norm(vec)
    return list(vec / norm) if norm else list(vec)


class CountingEmbed:
    """`index["embed"]` as a plain function of texts, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [letters(t) for t in texts]


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    with Memory(milvus_uri=str(tmp_path_factory.mktemp("conf") / "m.db"), embedder=DeterministicEmbedder()) as m:
        yield m


@pytest.fixture(params=["hippocampus", "inmemory"])
def make(request, memory) -> Callable[..., Any]:
    """make(index=None): a store of the implementation under test, empty (a fresh root label per test)."""
    root = uuid.uuid4().hex[:8]

    def new(index: dict[str, Any] | None = None) -> Any:
        if request.param == "inmemory":
            return InMemoryStore(index=index)
        return HippocampusStore(memory, prefix=("conf", root), index=index)

    new.kind = request.param
    new.ns = lambda *labels: ("conf", root, *labels) if request.param == "hippocampus" else labels
    return new


def idx(**extra: Any) -> dict[str, Any]:
    return {"dims": DIMS, "embed": CountingEmbed(), **extra}


def keys(items) -> list[str]:
    return [i.key for i in items]


def test_put_get_update_delete(make):
    store, ns = make(), make.ns("u1", "notes")
    assert store.get(ns, "a") is None
    store.put(ns, "a", {"text": "first", "n": 1, "deep": {"x": [1, 2]}})
    first = store.get(ns, "a")
    assert (first.value, tuple(first.namespace), first.key) == ({"text": "first", "n": 1, "deep": {"x": [1, 2]}}, ns, "a")
    store.put(ns, "a", {"text": "second"})
    second = store.get(ns, "a")
    assert second.value == {"text": "second"} and second.updated_at >= first.updated_at
    store.delete(ns, "a")
    store.delete(ns, "never")
    assert store.get(ns, "a") is None


def test_a_batch_reads_first_and_the_last_put_wins(make):
    store, ns = make(), make.ns("u2")
    store.put(ns, "k", {"v": 0})
    out = store.batch([PutOp(ns, "k", {"v": 1}), GetOp(ns, "k"), PutOp(ns, "k", {"v": 2}), SearchOp(ns), PutOp(ns, "j", {"v": 3}),
                       ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),))])
    assert out[0] is None and out[1].value == {"v": 0} and keys(out[3]) == ["k"] and out[5] == [ns]
    assert store.get(ns, "k").value == {"v": 2} and store.get(ns, "j").value == {"v": 3}


def test_search_without_a_query_filters_and_pages(make):
    store = make()
    for i in range(6):
        store.put(make.ns("u3", "a" if i % 2 else "b"), f"k{i}", {"n": i, "color": "red" if i < 3 else "blue", "tag": {"t": i % 3}})
    everything = store.search(make.ns("u3"), limit=50)
    assert sorted(keys(everything)) == [f"k{i}" for i in range(6)] and all(i.score is None for i in everything)
    assert sorted(keys(store.search(make.ns("u3", "a")))) == ["k1", "k3", "k5"]
    assert sorted(keys(store.search(make.ns("u3"), filter={"color": "red", "n": {"$gte": 1}}))) == ["k1", "k2"]
    assert sorted(keys(store.search(make.ns("u3"), filter={"n": {"$ne": 0, "$lt": 3}}))) == ["k1", "k2"]
    assert sorted(keys(store.search(make.ns("u3"), filter={"tag": {"t": 0}}))) == ["k0", "k3"]
    pages = [keys(store.search(make.ns("u3"), limit=4, offset=o)) for o in (0, 4, 8)]
    assert [len(p) for p in pages] == [4, 2, 0] and sorted(pages[0] + pages[1]) == sorted(keys(everything))


def test_listing_and_searching_without_a_user_cover_every_user(make):
    store = make()
    for user, rest in [("u4", ()), ("u5", ("x",)), ("u6", ("x", "y"))]:
        store.put(make.ns(user, *rest), "k", {"text": f"item of {user}"})
    base = len(make.ns())
    listed = [ns[base:] for ns in store.list_namespaces(prefix=make.ns() or None)]
    assert listed == [("u4",), ("u5", "x"), ("u6", "x", "y")]
    assert sorted(i.value["text"] for i in store.search(make.ns())) == ["item of u4", "item of u5", "item of u6"]
    assert [ns[base:] for ns in store.list_namespaces(prefix=make.ns() or None, suffix=("x",))] == [("u5", "x")]
    assert [ns[base:] for ns in store.list_namespaces(prefix=(*make.ns(), "*", "x"))] == [("u5", "x"), ("u6", "x", "y")]
    assert [ns[base:] for ns in store.list_namespaces(prefix=make.ns() or None, max_depth=base + 2)] == [("u4",), ("u5", "x"), ("u6", "x")]
    paged = [store.list_namespaces(prefix=make.ns() or None, limit=2, offset=o) for o in (0, 2)]
    assert [len(p) for p in paged] == [2, 1]


def test_the_index_scores_by_cosine_best_first(make):
    store, ns = make(index=idx()), make.ns("u7")
    texts = {"d1": "zany zebra xerxes", "d2": "something about dogs", "d3": "text about birds"}
    for key, text in texts.items():
        store.put(ns, key, {"text": text})
    hits = store.search(ns, query="zany xerxes")
    assert keys(hits)[0] == "d1" and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:  # the score is the cosine of the query and the indexed field, "$": the value as JSON
        indexed = json.dumps({"text": texts[hit.key]}, sort_keys=True, ensure_ascii=False)
        assert hit.score == pytest.approx(cosine(letters("zany xerxes"), letters(indexed)), abs=1e-4)
    assert keys(store.search(ns, query="zany xerxes", filter={"text": "text about birds"})) == ["d3"]
    first, second = store.search(ns, query="about", limit=2), store.search(ns, query="about", limit=2, offset=2)
    assert len(first) == 2 and len(second) == 1 and not set(keys(first)) & set(keys(second))


def test_index_fields_and_per_put_fields(make):
    store, ns = make(index=idx(fields=["title", "tags[*]"])), make.ns("u8")
    store.put(ns, "a", {"title": "quokka habits", "body": "penguins and seals", "tags": ["marsupial", "island"]})
    store.put(ns, "b", {"title": "penguins of the south", "body": "quokka"})
    [a] = [h for h in store.search(ns, query="quokka habits") if h.key == "a"]
    assert a.score == pytest.approx(1.0, abs=1e-4)  # the title field, embedded on its own
    assert keys(store.search(ns, query="marsupial"))[0] == "a"  # each list element its own vector
    body = {h.key: h.score for h in store.search(ns, query="penguins and seals")}
    assert body["a"] < 0.99  # the body is not indexed
    store.put(ns, "c", {"title": "zzz", "body": "penguins and seals"}, index=["body"])  # this put's own fields
    assert store.search(ns, query="penguins and seals")[0].key == "c"
    assert store.search(ns, query="penguins and seals")[0].score == pytest.approx(1.0, abs=1e-4)


def test_an_unindexed_item_is_not_found_by_a_query_but_is_listed(make):
    store, ns = make(index=idx()), make.ns("u9")
    for i in range(3):
        store.put(ns, f"k{i}", {"text": f"new text about dogs {i}"})
    store.put(ns, "hidden", {"text": "new text about dogs"}, index=False)
    assert "hidden" not in keys(store.search(ns, query="new text about dogs", limit=3))
    assert "hidden" in keys(store.search(ns, limit=10))


def test_async_calls_made_together(make):
    store, ns = make(index=idx()), make.ns("u10")

    async def run():
        await asyncio.gather(*(store.aput(ns, f"k{i}", {"text": f"note {i}"}) for i in range(20)))
        got = await asyncio.gather(*(store.aget(ns, f"k{i}") for i in range(20)), store.asearch(ns, query="note 7", limit=1))
        await store.adelete(ns, "k0")
        return got, await store.aget(ns, "k0")

    got, gone = asyncio.run(run())
    assert [g.value["text"] for g in got[:20]] == [f"note {i}" for i in range(20)]
    assert keys(got[20]) == ["k7"] and gone is None


# ---------------------------------------------------------------------------- Hippocampus only


def test_the_default_index_scores_a_cosine_a_user_can_threshold(memory):
    store = HippocampusStore(memory, prefix="plain")
    ns = ("plain", "ann")
    store.put(ns, "coffee", {"text": "Ann drinks dark roast coffee"})
    store.put(ns, "cat", {"text": "Ann has a grey cat"})
    hits = {h.key: h.score for h in store.search(ns, query="dark roast coffee")}
    embed = memory.embedder.encode
    want = float(embed(["dark roast coffee"], role="query")[0] @ embed(["Ann drinks dark roast coffee"])[0])
    assert hits["coffee"] == pytest.approx(want, abs=1e-4) and -1.0 <= hits["cat"] <= 1.0
    assert hits["cat"] < 0.2 < 0.5 < hits["coffee"]  # an unrelated item scores low: a threshold separates them


def test_another_store_object_sees_the_users_and_items(memory):
    HippocampusStore(memory, prefix="again").put(("again", "bea", "x"), "k", {"text": "Bea's note"})
    HippocampusStore(memory, prefix="again").put(("again", "cy"), "k", {"text": "Cy's note"})
    fresh = HippocampusStore(memory, prefix="again")
    assert fresh.list_namespaces() == [("again", "bea", "x"), ("again", "cy")]
    assert sorted(i.value["text"] for i in fresh.search(("again",))) == ["Bea's note", "Cy's note"]
    assert HippocampusStore(memory, prefix="again", users=["cy"]).list_namespaces() == [("again", "cy")]


def test_a_read_refreshes_the_ttl_without_changing_updated_at(memory):
    store = HippocampusStore(memory, prefix="ttl2")
    ns = ("ttl2", "dan")
    store.put(ns, "k", {"text": "Dan is in a meeting"}, ttl=5)
    before = store.get(ns, "k", refresh_ttl=False).updated_at
    [record] = memory.get_all("dan")
    memory.update(record.id, record.text, user_id="dan", expires_at=record.metadata["expires_at"] - 200)
    store.get(ns, "k")
    [after] = memory.get_all("dan")
    assert after.metadata["expires_at"] >= record.metadata["expires_at"] - 2  # refreshed to 5 minutes from now
    assert store.get(ns, "k", refresh_ttl=False).updated_at == before  # a read is no update


class Counting:
    """The Memory with its calls counted: the store must write a batch in bulk."""

    def __init__(self, memory: Memory) -> None:
        self._memory, self.calls = memory, {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._memory, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)
        return counted


def test_a_large_batch_is_one_embedding_call_and_one_write(memory):
    counting, embed = Counting(memory), CountingEmbed()
    store = HippocampusStore(counting, prefix="bulk", index={"dims": DIMS, "embed": embed})
    ops = [PutOp(("bulk", f"user{i % 3}", str(i % 2)), f"key{i}", {"text": f"bulk item {i}"}) for i in range(150)]
    store.batch(ops + [GetOp(("bulk", "user0", "0"), "key0"), SearchOp(("bulk",), limit=1000)])
    assert embed.calls == 1 and counting.calls.get("add_many") == 1 and "add" not in counting.calls
    assert len(store.search(("bulk",), limit=1000)) == 150
    counting.calls.clear()
    store.batch([PutOp(op.namespace, op.key, {"text": "changed"}) for op in ops[:75]] +
                [PutOp(op.namespace, op.key, None) for op in ops[75:]])
    assert counting.calls.get("update_many") == 3 and counting.calls.get("delete_many") == 3 and "update" not in counting.calls
    assert {i.value["text"] for i in store.search(("bulk",), limit=1000)} == {"changed"}


def test_concurrent_async_calls_become_one_batch(memory):
    counting = Counting(memory)
    store = HippocampusStore(counting, prefix="gathered", index={"dims": DIMS, "embed": CountingEmbed()})
    ns = ("gathered", "eve")

    async def run():
        return await asyncio.gather(*(store.aput(ns, f"k{i}", {"text": f"item {i}"}) for i in range(200)),
                                    *(store.alist_namespaces(max_depth=2) for _ in range(50)))

    asyncio.run(run())
    assert counting.calls.get("add_many") == 1 and len(store.search(ns, limit=500)) == 200


def test_a_ttl_refresh_is_one_write_per_user_and_no_history_event(memory):
    counting = Counting(memory)
    store = HippocampusStore(counting, prefix="ttl3")
    store.batch([PutOp(("ttl3", user), f"k{i}", {"text": f"{user} note {i}"}, ttl=5) for user in ("fay", "gus") for i in range(4)])
    records = {r.id: r for user in ("fay", "gus") for r in memory.get_all(user) if r.metadata.get("lg_scope") == "ttl3"}
    events = {i: len(memory.history(i, r.user_id)) for i, r in records.items()}
    for record in records.values():  # as if most of the TTL had passed
        memory.renew_expiry({record.id: now_ts() + 10}, record.user_id)
    counting.calls.clear()
    assert len(store.search(("ttl3",), limit=100)) == 8  # a read of every item refreshes every TTL
    assert counting.calls.get("renew_expiry") == 2 and "update_many" not in counting.calls and "update" not in counting.calls
    after = {r.id: r for user in ("fay", "gus") for r in memory.get_all(user) if r.metadata.get("lg_scope") == "ttl3"}
    assert all(r.metadata["expires_at"] >= now_ts() + 290 for r in after.values())
    assert {i: len(memory.history(i, r.user_id)) for i, r in records.items()} == events  # no "updated" event
    assert all(after[i].text == r.text and after[i].metadata["lg_value"] == r.metadata["lg_value"] for i, r in records.items())


def test_sweep_ttl_deletes_the_expired_items_and_the_sweeper_does_it_alone(memory):
    store = HippocampusStore(memory, prefix="sweep")
    store.batch([PutOp(("sweep", "hal"), "old", {"text": "Hal's parcel arrives today"}, ttl=5),
                 PutOp(("sweep", "ida"), "old", {"text": "Ida's call at noon"}, ttl=5),
                 PutOp(("sweep", "ida"), "live", {"text": "Ida's meeting tomorrow"}, ttl=5),
                 PutOp(("sweep", "ida"), "kept", {"text": "Ida likes tea"})])

    def past(user: str, key: str) -> None:
        [record] = [r for r in memory.get_all(user) if r.metadata.get("lg_scope") == "sweep" and r.metadata["lg_key"] == key]
        memory.renew_expiry({record.id: now_ts() - 5}, user)

    def keys(user: str) -> set[str]:
        return {r.metadata["lg_key"] for r in memory.get_all(user, include_expired=True) if r.metadata.get("lg_scope") == "sweep"}

    past("hal", "old")
    past("ida", "old")
    assert store.sweep_ttl() == 2 and store.sweep_ttl() == 0
    assert keys("hal") == set() and keys("ida") == {"live", "kept"}
    past("ida", "live")
    assert store.stop_ttl_sweeper() is True  # none running
    with pytest.raises(ValueError, match="sweep_interval_minutes"):
        store.start_ttl_sweeper()  # the store's ttl= names no interval
    future = store.start_ttl_sweeper(sweep_interval_minutes=0.2 / 60)
    for _ in range(300):  # a guard against a sweeper that never sweeps, not a measurement
        if keys("ida") == {"kept"}:
            break
        time.sleep(0.1)
    assert keys("ida") == {"kept"}
    assert store.stop_ttl_sweeper(timeout=30) is True and future.done()
    assert asyncio.run(store.asweep_ttl()) == 0
