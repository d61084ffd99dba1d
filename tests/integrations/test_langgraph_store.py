"""HippocampusStore (issue 33) against the real langgraph package: every op through LangGraph's own
BaseStore methods and raw batches, compared with LangGraph's InMemoryStore where both must agree
(gets, filters, pagination, namespace listings); Hippocampus's own search behind a query; the
namespace rule and its isolation; async; a compiled StateGraph whose node reads and writes through
the store. Real milvus-lite, the deterministic embedder; no model is needed."""

from __future__ import annotations

import asyncio
import uuid
from typing import TypedDict

import pytest
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from hippocampus import Memory
from hippocampus.integrations.langgraph import HippocampusStore, value_text
from hippocampus.models import now_ts
from hippocampus.testing import DeterministicEmbedder

ITEMS = [  # (namespace, key, value)
    (("memories", "alice"), "coffee", {"text": "Alice drinks dark roast coffee every morning", "kind": "pref", "n": 1}),
    (("memories", "alice"), "cat", {"text": "Alice has a grey cat named Miso", "kind": "fact", "n": 2}),
    (("memories", "alice", "work"), "atlas", {"text": "Project Atlas ships on Friday", "kind": "work", "n": 3,
                                              "meta": {"team": "core"}}),
    (("memories", "alice", "work", "q3"), "budget", {"content": "The Q3 budget is 40k", "kind": "work", "n": 4}),
    (("memories", "alice", "work"), "tags", {"tags": ["a", "b"], "kind": "work", "n": 5}),  # no text: JSON
    (("memories", "bob"), "coffee", {"text": "Bob only drinks green tea", "kind": "pref", "n": 6}),
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    with Memory(milvus_uri=str(tmp_path_factory.mktemp("lg") / "m.db"), embedder=DeterministicEmbedder()) as m:
        yield m


@pytest.fixture(scope="module")
def filled(memory):
    """(store, reference): the same items put into a HippocampusStore and LangGraph's InMemoryStore."""
    store, reference = HippocampusStore(memory), InMemoryStore()
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)
        reference.put(namespace, key, value)
    return store, reference


def _keys(items) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(i.namespace), i.key) for i in items]


def test_get_returns_what_was_put_as_inmemorystore_does(filled):
    store, reference = filled
    for namespace, key, value in ITEMS:
        got, want = store.get(namespace, key), reference.get(namespace, key)
        assert (got.value, tuple(got.namespace), got.key) == (want.value, tuple(want.namespace), want.key) == (value, namespace, key)
        assert got.created_at.tzinfo is not None and got.updated_at >= got.created_at
    for namespace, key in [(("memories", "alice"), "atlas"), (("memories", "bob"), "cat")]:
        assert store.get(namespace, key) is None and reference.get(namespace, key) is None  # wrong namespace, other user
    assert store.get(("memories", "carol"), "x") is None  # (InMemoryStore would list an empty ("memories", "carol") after this)


def test_an_item_is_one_memory_of_its_user_with_the_rule_in_metadata(filled, memory):
    records = {r.metadata["lg_key"]: r for r in memory.get_all("alice") if "lg_key" in r.metadata}
    assert set(records) == {"coffee", "cat", "atlas", "budget", "tags"}
    assert records["coffee"].text == "Alice drinks dark roast coffee every morning"
    assert records["budget"].text == "The Q3 budget is 40k"  # "content" when there is no "text"
    assert records["tags"].text == value_text(ITEMS[4][2]) and '"tags": ["a", "b"]' in records["tags"].text
    assert records["budget"].metadata["lg_ns"] == "work.q3" and records["budget"].metadata["lg_path"] == {"d1": "work", "d2": "work.q3"}
    assert {r.memory_type.value for r in records.values()} == {"procedural"}


def test_filters_and_pagination_agree_with_inmemorystore(filled):
    store, reference = filled
    cases = [(("memories", "alice"), None), (("memories", "alice"), {"kind": "work"}), (("memories", "alice"), {"n": {"$gt": 2}}),
             (("memories", "alice"), {"n": {"$gte": 2, "$lt": 4}}), (("memories", "alice"), {"kind": {"$ne": "work"}}),
             (("memories", "alice"), {"meta": {"team": "core"}}), (("memories", "alice"), {"tags": ["a", "b"]}),
             (("memories", "alice", "work"), None), (("memories", "alice", "work"), {"kind": "pref"}),
             (("memories",), {"kind": "pref"}), (("memories", "bob"), None), (("other",), None)]
    for prefix, where in cases:
        got, want = store.search(prefix, filter=where, limit=50), reference.search(prefix, filter=where, limit=50)
        assert sorted(_keys(got)) == sorted(_keys(want)), (prefix, where)
        assert all(item.score is None for item in got)  # no query: a listing
    pages = [store.search(("memories", "alice"), limit=2, offset=o) for o in (0, 2, 4, 6)]
    assert [len(p) for p in pages] == [2, 2, 1, 0]
    assert sorted(k for p in pages for k in _keys(p)) == sorted(_keys(reference.search(("memories", "alice"), limit=50)))
    assert store.search(("memories", "alice"), limit=0) == []


def test_a_query_is_hippocampus_search_held_to_the_namespace(filled):
    store, _ = filled
    hits = store.search(("memories", "alice"), query="what does Alice drink in the morning, coffee?")
    assert hits[0].key == "coffee" and isinstance(hits[0].score, float)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {tuple(h.namespace)[:2] for h in hits} == {("memories", "alice")}  # bob's coffee never shows
    work = store.search(("memories", "alice", "work"), query="coffee budget Friday")
    assert {h.key for h in work} <= {"atlas", "budget", "tags"} and "budget" in {h.key for h in work}
    assert [h.key for h in store.search(("memories", "alice"), query="coffee", filter={"kind": "work", "n": {"$gte": 4}})] \
        in (["budget", "tags"], ["tags", "budget"])
    first, second = (store.search(("memories", "alice"), query="Alice", limit=2, offset=o) for o in (0, 2))
    assert len(first) == 2 and not set(_keys(first)) & set(_keys(second))


def test_list_namespaces_agrees_with_inmemorystore(filled):
    store, reference = filled
    cases = [dict(), dict(prefix=("memories", "alice")), dict(prefix=("memories", "*", "work")), dict(suffix=("work",)),
             dict(suffix=("q3",)), dict(max_depth=3), dict(prefix=("memories", "alice"), max_depth=3),
             dict(limit=2), dict(limit=2, offset=2), dict(prefix=("other",))]
    for case in cases:
        assert store.list_namespaces(**case) == reference.list_namespaces(**case), case


def test_put_on_a_key_updates_its_memory_and_none_deletes_it(memory):
    store = HippocampusStore(memory, prefix="notes")
    store.put(("notes", "dora"), "home", {"text": "Dora lives in Oslo"})
    first = store.get(("notes", "dora"), "home")
    [record] = memory.get_all("dora")
    store.put(("notes", "dora"), "home", {"text": "Dora lives in Bergen", "since": 2024})
    [after] = memory.get_all("dora")
    assert after.id == record.id and after.text == "Dora lives in Bergen"  # the same memory, its id kept
    second = store.get(("notes", "dora"), "home")
    assert second.value == {"text": "Dora lives in Bergen", "since": 2024} and second.created_at == first.created_at
    assert [h.key for h in store.search(("notes", "dora"), query="Bergen")] == ["home"]
    store.batch([PutOp(("notes", "dora"), "home", None), PutOp(("notes", "dora"), "gone", None)])  # a missing key: nothing
    assert store.get(("notes", "dora"), "home") is None and memory.get_all("dora") == []


def test_a_batch_reads_the_store_as_it_was_and_the_last_put_wins(memory):
    store = HippocampusStore(memory, prefix="batch")
    ns = ("batch", "erin")
    results = store.batch([PutOp(ns, "k", {"text": "one"}), GetOp(ns, "k"), PutOp(ns, "k", {"text": "two"}),
                           SearchOp(ns), ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),))])
    assert results == [None, None, None, [], []]  # as InMemoryStore: reads see the state before the batch
    assert store.get(ns, "k").value == {"text": "two"} and len(memory.get_all("erin")) == 1


def test_abatch_and_the_async_methods(memory):
    store = HippocampusStore(memory, prefix="async")
    ns = ("async", "finn")

    async def run():
        await store.aput(ns, "a", {"text": "Finn plays the trumpet"})
        await store.aput((*ns, "x"), "b", {"text": "Finn is learning Welsh", "level": 2})
        got, found, listed = await asyncio.gather(store.aget(ns, "a"), store.asearch(ns, query="trumpet"),
                                                  store.alist_namespaces(prefix=ns))
        raw = await store.abatch([GetOp((*ns, "x"), "b"), SearchOp(ns, filter={"level": 2})])
        await store.adelete(ns, "a")
        return got, found, listed, raw, await store.aget(ns, "a")

    got, found, listed, raw, deleted = asyncio.run(run())
    assert got.value == {"text": "Finn plays the trumpet"} and found[0].key == "a"
    assert listed == [ns, (*ns, "x")] and raw[0].key == "b" and [i.key for i in raw[1]] == ["b"] and deleted is None


def test_isolation_between_namespaces_users_prefixes_and_other_memories(memory):
    store, other = HippocampusStore(memory, prefix="iso"), HippocampusStore(memory, prefix="iso2")
    for ns in [("iso", "gus"), ("iso", "gus", "a"), ("iso", "gus", "b"), ("iso", "hal")]:
        store.put(ns, "same", {"text": f"secret of {'.'.join(ns)}"})
    other.put(("iso2", "gus"), "same", {"text": "secret of another store"})
    memory.add("Gus said his secret out loud", user_id="gus")  # a memory that is no item of the store
    for ns in [("iso", "gus"), ("iso", "gus", "a"), ("iso", "gus", "b"), ("iso", "hal")]:
        assert store.get(ns, "same").value == {"text": f"secret of {'.'.join(ns)}"}
        seen = store.search(ns, query="secret", limit=50)
        assert seen and all(tuple(i.namespace)[: len(ns)] == ns for i in seen), ns
    assert [tuple(i.namespace) for i in store.search(("iso", "gus", "a"), query="secret of iso.gus.b")] == [("iso", "gus", "a")]
    assert {tuple(i.namespace) for i in store.search(("iso", "gus"), query="secret", limit=50)} == {
        ("iso", "gus"), ("iso", "gus", "a"), ("iso", "gus", "b")}
    assert [i.value["text"] for i in other.search(("iso2", "gus"), query="secret")] == ["secret of another store"]
    assert store.search(("iso2", "gus"), query="secret") == [] and other.get(("iso2", "gus", "a"), "same") is None


def test_namespaces_outside_the_rule_are_refused_and_nothing_is_written(memory):
    store = HippocampusStore(memory, prefix="rule")
    before = len(memory.get_all("ivy"))
    for bad in [("other", "ivy"), ("rule",), ("rule", "i.vy"), ("rule", "")]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(("rule", "ivy"), "ok", {"text": "kept?"}), PutOp(bad, "k", {"text": "x"})])
    assert len(memory.get_all("ivy")) == before
    assert store.search(("rule",), query="anything") == []  # the open default walks every user of the prefix
    only = HippocampusStore(memory, prefix="rule", users=["ivy"])
    with pytest.raises(InvalidNamespaceError, match="not one of this store's users"):
        only.put(("rule", "jan"), "k", {"text": "x"})  # a store given users= reads and writes only theirs


def test_a_store_bound_to_one_user_keeps_whole_namespaces(memory):
    store = HippocampusStore(memory, prefix=(), user_id="jo")
    store.put(("prefs",), "theme", {"text": "Jo prefers the dark theme"})
    store.put(("projects", "web"), "stack", {"text": "Jo builds the site with Svelte"})
    assert store.list_namespaces() == [("prefs",), ("projects", "web")]
    assert store.get(("prefs",), "theme").value["text"] == "Jo prefers the dark theme"
    assert [i.key for i in store.search(("projects",), query="Svelte")] == ["stack"]
    assert {r.user_id for r in memory.get_all("jo")} == {"jo"} and len(memory.get_all("jo")) == 2


def test_ttl_is_the_memorys_expiry_refreshed_by_reads(memory):
    store = HippocampusStore(memory, prefix="ttl")
    ns = ("ttl", "max")

    def expiry(key):
        [record] = [r for r in memory.get_all("max", include_expired=True) if r.metadata["lg_key"] == key]
        return record, record.metadata.get("expires_at")

    start = now_ts()
    store.put(ns, "soon", {"text": "Max is at the dentist today"}, ttl=5)
    record, at = expiry("soon")
    assert record.metadata["lg_ttl"] == 5 and start + 300 <= at <= now_ts() + 301
    memory.update(record.id, record.text, user_id="max", expires_at=now_ts() + 10)  # as if most of the TTL had passed
    store.get(ns, "soon", refresh_ttl=False)
    assert expiry("soon")[1] <= now_ts() + 10
    assert store.search(ns, query="dentist")[0].key == "soon"  # a read refreshes: 5 minutes from now again
    assert expiry("soon")[1] >= now_ts() + 299
    memory.update(record.id, record.text, user_id="max", expires_at=now_ts() - 1)  # past its TTL
    assert store.get(ns, "soon") is None and store.search(ns, query="dentist") == [] and store.list_namespaces(prefix=ns) == []
    store.put(ns, "kept", {"text": "Max likes jazz"}, ttl=1)
    store.put(ns, "kept", {"text": "Max likes jazz and blues"})  # a put without a TTL lifts it
    assert expiry("kept")[1] > now_ts() + 100 * 365 * 86400 and expiry("kept")[0].metadata["lg_ttl"] is None
    defaulted = HippocampusStore(memory, prefix="ttl", ttl={"default_ttl": 1, "refresh_on_read": False})
    defaulted.put(ns, "brief", {"text": "Max is on a call"})
    assert now_ts() + 50 <= expiry("brief")[1] <= now_ts() + 61
    with pytest.raises(ValueError, match="ttl"):
        store.batch([PutOp(ns, "first", {"text": "x"}), PutOp(ns, "bad", {"text": "x"}, ttl=0)])  # nothing written
    assert {r.metadata["lg_key"] for r in memory.get_all("max", include_expired=True)} == {"soon", "kept", "brief"}


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def remember(state: State) -> dict:
    store = get_store()  # LangGraph's runtime hands the compiled store to the node
    store.put(("memories", state["user"]), uuid.uuid4().hex[:8], {"text": state["said"]})
    return {}


def recall(state: State, *, store) -> dict:  # ... or as the `store` parameter
    return {"recalled": [i.value["text"] for i in store.search(("memories", state["user"]), query=state["said"], limit=3)]}


def test_a_compiled_graph_reads_and_writes_through_the_store(memory):
    builder = StateGraph(State)
    builder.add_node("recall", recall)
    builder.add_node("remember", remember)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=HippocampusStore(memory))
    first = graph.invoke({"user": "kim", "said": "I am allergic to peanuts", "recalled": []})
    assert first["recalled"] == []
    second = graph.invoke({"user": "kim", "said": "Can I eat this peanut satay? I am allergic", "recalled": []})
    assert second["recalled"][0] == "I am allergic to peanuts"
    assert graph.invoke({"user": "lee", "said": "peanuts allergic", "recalled": []})["recalled"] == []  # kim's stays kim's
    assert len(memory.get_all("kim")) == 2
