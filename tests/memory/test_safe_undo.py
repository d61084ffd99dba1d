"""Safe undo (issue 31, item 5): an event is undone only when nothing later touched its memory or a
fact distilled from it; otherwise the refusal names the later event. Facts distilled since follow
their source. Real milvus-lite, the offline embedder and rules; REST through a real uvicorn."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hippocampus import Client, InvalidInput, Memory
from hippocampus.lifecycle.policy import DAY
from hippocampus.models import HistoryAction, simulated_clock
from hippocampus.server import create_app
from tests.service_support import IN_PROCESS_URL, in_process

U = "alice"


def _last(memory: Memory, memory_id: int):
    return memory.history(memory_id, U)[-1]


def _texts(memory: Memory) -> list[str]:
    return sorted(r.text for r in memory.get_all(U))


def test_an_update_is_refused_when_a_later_event_changed_the_metadata_and_names_it(memory: Memory):
    mid = memory.add("I moved to Berlin in May", user_id=U, chat_id="c1").ids[0]
    memory.update(mid, "I moved to Hamburg in June", user_id=U)
    first = _last(memory, mid).event_id
    memory.update(mid, "I moved to Hamburg in June", user_id=U, metadata={"mood": "glad"})  # metadata only
    later = _last(memory, mid)
    assert later.action is HistoryAction.UPDATED
    with pytest.raises(InvalidInput) as refused:
        memory.undo(first, U)
    message = str(refused.value)
    assert f"event {later.event_id} (updated, " in message and "undo the later event first" in message
    assert "\n" not in message
    back = memory.get(mid, U)
    assert (back.text, back.metadata["mood"]) == ("I moved to Hamburg in June", "glad")  # nothing changed
    assert _last(memory, mid).event_id == later.event_id
    memory.undo(later.event_id, U)  # the latest event still undoes
    assert "mood" not in memory.get(mid, U).metadata
    memory.undo(first, U)  # and then the earlier one: an event and its undo cancel out
    assert memory.get(mid, U).text == "I moved to Berlin in May"


@pytest.mark.parametrize("later", ["curate", "archive"])
def test_a_later_curate_or_archive_refuses_the_undo_of_an_update(memory: Memory, later: str):
    mid = memory.add("I work at the bakery", user_id=U).ids[0]
    memory.update(mid, "I work at the library", user_id=U)
    first = _last(memory, mid).event_id
    if later == "curate":
        memory.curate(mid, U, category="core")
    else:
        with simulated_clock(lambda: memory.get(mid, U).life.last_activated + 200 * DAY):
            memory.decay(U)
    blocking = _last(memory, mid)
    assert blocking.action is (HistoryAction.UPDATED if later == "curate" else HistoryAction.ARCHIVED)
    with pytest.raises(InvalidInput, match=f"event {blocking.event_id} \\({blocking.action.value}, "):
        memory.undo(first, U)
    assert memory.get(mid, U).text == "I work at the library"


def test_hits_are_no_change_and_the_latest_event_undoes(memory: Memory):
    mid = memory.add("I like green tea", user_id=U).ids[0]
    memory.update(mid, "I like oolong tea", user_id=U)
    event = _last(memory, mid).event_id
    memory.mark_used([mid], user_id=U)
    assert _last(memory, mid).action is HistoryAction.HIT
    result = memory.undo(event, U)
    assert result.memory_ids == [mid] and result.removed_ids == []
    assert memory.get(mid, U).text == "I like green tea"


def test_the_fact_distilled_from_the_undone_text_follows_it(memory: Memory):
    mid = memory.add("I moved to Berlin in May", user_id=U, chat_id="c1").ids[0]
    memory.update(mid, "I moved to Hamburg in June", user_id=U)
    event = _last(memory, mid).event_id
    assert memory.consolidate(U).semantic_created == 1
    fact = next(r for r in memory.get_all(U) if r.memory_type.value == "semantic")
    assert "Hamburg" in fact.text and fact.metadata["source_memory_ids"] == [mid]
    result = memory.undo(event, U)
    assert result.memory_ids == [mid] and result.removed_ids == [fact.id]
    assert not any("Hamburg" in t for t in _texts(memory))  # the case: the fact still said Hamburg
    gone = _last(memory, fact.id)
    assert (gone.action, gone.actor, gone.details["undo_of"]) == (HistoryAction.DELETED, "undo", event)
    assert memory.get(mid, U).metadata.get("distilled") is None  # distilled again from what it says now
    assert memory.consolidate(U).semantic_created == 1
    assert any("Berlin" in t for t in _texts(memory) if t.startswith("The user"))


def test_a_fact_changed_since_refuses_the_undo_and_says_why(memory: Memory):
    mid = memory.add("I moved to Berlin in May", user_id=U, chat_id="c1").ids[0]
    memory.update(mid, "I moved to Hamburg in June", user_id=U)
    event = _last(memory, mid).event_id
    memory.consolidate(U)
    fact = next(r for r in memory.get_all(U) if r.memory_type.value == "semantic")
    memory.update(fact.id, "The user moved to Hamburg in June 2025", user_id=U)
    edit = _last(memory, fact.id).event_id
    with pytest.raises(InvalidInput, match=f"fact {fact.id} distilled from memory {mid} would have to follow.*event {edit} "):
        memory.undo(event, U)
    assert memory.get(mid, U).text == "I moved to Hamburg in June"
    assert memory.get(fact.id, U).text == "The user moved to Hamburg in June 2025"


def test_the_refusal_through_rest(memory: Memory):
    mid = memory.add("The meeting is on Monday", user_id=U).ids[0]
    with in_process(create_app(memory, mcp=False)) as transport, Client(IN_PROCESS_URL, transport=transport) as client:
        client.update(mid, "The meeting is on Tuesday", user_id=U)
        first = client.history(mid, U)[-1].event_id
        client.curate(mid, U, category="decision")
        later = client.history(mid, U)[-1]
        with pytest.raises(InvalidInput, match=f"event {later.event_id} \\(updated, .*then event {first}"):
            client.undo(first, U)
        assert client.get(mid, U).text == "The meeting is on Tuesday"
        assert client.undo(later.event_id, U).memory_ids == [mid]
        assert client.undo(first, U).memory_ids == [mid]
        assert client.get(mid, U).text == "The meeting is on Monday"


def test_a_fact_that_superseded_an_older_one_waits_for_that_supersession_to_be_undone(memory: Memory):
    memory.add("I live in Berlin", user_id=U, chat_id="c0", ts=1_700_000_000)
    memory.consolidate(U)
    berlin = next(r for r in memory.get_all(U) if r.text == "The user lives in Berlin")
    mid = memory.add("I live in Paris", user_id=U, chat_id="c1").ids[0]
    memory.update(mid, "I live in Hamburg", user_id=U)
    event = _last(memory, mid).event_id
    assert memory.consolidate(U).superseded == 1
    hamburg = next(r for r in memory.get_all(U) if r.text == "The user lives in Hamburg")
    for later in [e for e in memory.history(mid, U) if e.event_id > event and e.action is not HistoryAction.DISTILLED][::-1]:
        with pytest.raises(InvalidInput, match=f"event {later.event_id} "):  # each later change is named, newest first
            memory.undo(event, U)
        memory.undo(later.event_id, U)
    supersession = _last(memory, berlin.id)
    assert (supersession.action, supersession.details["superseded_by"]) == (HistoryAction.SUPERSEDED, hamburg.id)
    with pytest.raises(InvalidInput, match=f"fact {hamburg.id} .* superseded memory {berlin.id} by event {supersession.event_id} "):
        memory.undo(event, U)
    memory.undo(supersession.event_id, U)
    assert memory.undo(event, U).removed_ids == [hamburg.id]
    assert memory.get(berlin.id, U).life.superseded_by is None
    assert memory.get(mid, U).text == "I live in Paris"


_TEXTS = ["I moved to Berlin in May", "I moved to Hamburg in June", "我对花生过敏", "I prefer tea to coffee"]
_OPS = st.lists(st.one_of(st.tuples(st.just("add"), st.sampled_from(_TEXTS)),
                          st.tuples(st.just("update"), st.integers(0, 9), st.sampled_from(_TEXTS)),
                          st.tuples(st.just("curate"), st.integers(0, 9), st.sampled_from(["core", "decision", "fact"]))),
                min_size=2, max_size=6)


@settings(max_examples=8, deadline=None)
@given(ops=_OPS)
def test_property_only_the_newest_change_of_a_memory_undoes_and_newest_first_undoes_everything(memory: Memory, ops: list[tuple]):
    user = f"u-{uuid.uuid4().hex[:12]}"
    ids: list[int] = []
    for op in ops:
        if op[0] == "add" or not ids:
            ids.append(memory.add(op[1] if op[0] == "add" else _TEXTS[0], user_id=user).ids[0])
        elif op[0] == "update":
            memory.update(ids[op[1] % len(ids)], op[2], user_id=user)
        else:
            memory.curate(ids[op[1] % len(ids)], user, category=op[2])
    events = sorted((e for i in ids for e in memory.history(i, user)), key=lambda e: e.event_id)
    seen = sorted((r.id, r.text, r.life.category.value) for r in memory.get_all(user))
    for e in events:
        newer = [x for x in events if x.memory_id == e.memory_id and x.event_id > e.event_id]
        if newer:  # an older event of a memory changed since: refused, naming the newest change, nothing changed
            with pytest.raises(InvalidInput, match=f"event {newer[-1].event_id} "):
                memory.undo(e.event_id, user)
    assert sorted((r.id, r.text, r.life.category.value) for r in memory.get_all(user)) == seen
    for e in reversed(events):  # newest first: every one undoes
        memory.undo(e.event_id, user)
    assert memory.get_all(user) == []
