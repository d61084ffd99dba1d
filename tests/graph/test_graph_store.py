"""Graph memory's storage (issue 16, item 2): entities and triples in `<name>_graph`, each supported
by memories of its own user; building reads a memory once (again when its text changed); deleting,
merging, forgetting or resetting memories drops their supports in the same operation, and a row with
no support left is deleted, with history saying so. Real milvus-lite; the extractor is scripted
through the model interface (the offline extractor has its own tests)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hippocampus.models import HistoryAction
from tests.consolidation_helpers import merge_union

_PLACE = re.compile(r"\b(?:live in|moved to) ([A-Z][a-z]+)")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")


def scripted_triples(inputs: dict) -> str:
    """A model that names capitalised words as entities and states (speaker, lives in, place)."""
    items = []
    for shown in inputs["memories"]:
        text = shown["text"]
        entities = [{"name": n, "type": "thing"} for n in dict.fromkeys(_NAME.findall(text))]
        triples = [{"subject": "I", "predicate": "lives in", "object": m} for m in _PLACE.findall(text)]
        items.append({"id": shown["id"], "entities": entities, "triples": triples})
    return json.dumps({"items": items})


@pytest.fixture
def graphed(modelled):
    memory, chat = modelled
    chat.replies["TripleExtraction"] = scripted_triples
    return memory, chat


def _add(memory, user, text):
    return memory.add(text, user_id=user).ids[0]


def _rows_ok(memory, users):
    """The invariant: every graph row has support, and only live memories of its own user."""
    for user in users:
        live = {r.id for r in memory.get_all(user)}
        for row in memory.store.graph.rows(user):
            assert row["supports"], row
            assert set(row["supports"]) <= live, (row, live)


def test_build_reads_each_memory_once_and_keeps_users_apart(graphed):
    memory, chat = graphed
    lyon = _add(memory, "alice", "I moved to Lyon with Ana")
    paris = _add(memory, "alice", "Ana said I live in Lyon now")
    bob = _add(memory, "bob", "I live in Lyon too")
    stats = memory.build_graph()
    assert (stats.users, stats.memories_read, stats.errors) == (2, 3, 0) and chat.count("TripleExtraction") == 2
    view = memory.graph("alice")
    entities = {e.name: e.memory_ids for e in view.entities}
    assert entities == {"Lyon": [lyon, paris], "Ana": [lyon, paris], "alice": [lyon, paris]} and view.memories_read == 2
    assert [(t.subject, t.predicate, t.object, t.memory_ids) for t in view.triples] == [("alice", "lives in", "Lyon", [lyon, paris])]
    assert [t.memory_ids for t in memory.graph("bob").triples] == [[bob]]
    assert memory.build_graph().memories_read == 0 and chat.count("TripleExtraction") == 2  # nothing new: no call
    _rows_ok(memory, ["alice", "bob"])


def test_deleting_the_last_support_deletes_the_row_and_history_says_so(graphed):
    memory, _chat = graphed
    both = _add(memory, "alice", "I moved to Lyon with Ana")
    lyon = _add(memory, "alice", "I live in Lyon")
    other = _add(memory, "bob", "I moved to Lyon with Ana")
    memory.build_graph()
    memory.delete(both, user_id="alice")
    view = memory.graph("alice")
    assert {e.name: e.memory_ids for e in view.entities} == {"Lyon": [lyon], "alice": [lyon]}  # Ana had no other support
    assert [t.memory_ids for t in view.triples] == [[lyon]]
    pruned = [e for e in memory.history(both, user_id="alice") if e.action is HistoryAction.GRAPH_PRUNED]
    assert len(pruned) == 1 and pruned[0].details["removed"] == ["Ana"]
    assert {e.name for e in memory.graph("bob").entities} == {"Lyon", "Ana", "bob"}  # bob's rows untouched
    memory.delete(lyon, user_id="alice")
    assert memory.graph("alice").entities == [] and memory.graph("alice").triples == []
    assert memory.graph("bob").triples[0].memory_ids == [other]


def test_a_changed_text_is_read_again_and_its_old_triples_go(graphed):
    memory, chat = graphed
    mid = _add(memory, "alice", "I live in Lyon")
    memory.build_graph("alice")
    memory.update(mid, "I moved to Porto", user_id="alice")
    assert memory.build_graph("alice").memories_read == 1 and chat.count("TripleExtraction") == 2
    view = memory.graph("alice")
    assert [(t.object, t.memory_ids) for t in view.triples] == [("Porto", [mid])]
    assert {e.name for e in view.entities} == {"Porto", "alice"}


def test_a_failed_extraction_leaves_the_batch_for_the_next_build(graphed):
    memory, chat = graphed
    _add(memory, "alice", "I live in Lyon")
    chat.replies["TripleExtraction"] = lambda _inputs: RuntimeError("model down")
    stats = memory.build_graph("alice")
    assert (stats.memories_read, stats.errors) == (0, 1) and memory.graph("alice").memories_read == 0
    chat.replies["TripleExtraction"] = scripted_triples
    assert memory.build_graph("alice").memories_read == 1


def test_consolidation_builds_the_graph_when_it_is_on_and_merges_cascade(graphed):
    memory, chat = graphed
    memory.config.graph = "on"
    a = _add(memory, "alice", "I moved to Lyon with Ana")
    stats = memory.consolidate("alice")
    assert stats.graph_read == 1 and memory.graph("alice").entities
    memory.delete_many([a], user_id="alice")  # the batch path (UI) cascades too
    assert memory.graph("alice").entities == []
    chat.replies["MergeResult"] = merge_union
    twins = [_add(memory, "alice", "I moved to Porto with Ana") for _ in range(2)]
    memory.build_graph("alice")
    stats = memory.consolidate("alice")
    merged = [r.id for r in memory.get_all("alice")]
    assert stats.merged == 1 and len(merged) == 1 and merged[0] not in twins
    assert {e.name: e.memory_ids for e in memory.graph("alice").entities} == {"Porto": merged, "Ana": merged, "alice": merged}
    _add(memory, "alice", "I live in Lyon")
    memory.consolidate("alice")
    memory.reset(user_id="alice")
    assert memory.store.graph.rows("alice") == []


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "delete", "update", "build"]), st.sampled_from(["alice", "bob"]),
                          st.integers(0, 5), st.sampled_from(["I live in Lyon", "I moved to Porto with Ana", "Ana and Bea"])),
                min_size=3, max_size=9))
def test_every_row_keeps_a_live_support_of_its_own_user(graphed, steps):
    memory, _chat = graphed
    memory.reset(user_id="alice")
    memory.reset(user_id="bob")
    for op, user, pick, text in steps:
        ids = sorted(r.id for r in memory.get_all(user))
        if op == "add" or not ids:
            _add(memory, user, text)
        elif op == "delete":
            memory.delete(ids[pick % len(ids)], user_id=user)
        elif op == "update":
            memory.update(ids[pick % len(ids)], text + " again", user_id=user)
            memory.build_graph(user)
        else:
            memory.build_graph()
        _rows_ok(memory, ["alice", "bob"])
