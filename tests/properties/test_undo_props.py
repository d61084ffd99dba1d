"""Undo (issue 15, item 4), at the library level against real milvus-lite: for any sequence of adds,
updates, deletes and curates on one user, undoing the last event restores exactly the state the user
saw before it (ids aside: a deleted memory comes back under a new id)."""

from __future__ import annotations

import uuid
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.models import Category

TEXTS = ["I moved to Berlin in May", "My sister lives in Hangzhou", "I am allergic to peanuts", "We hiked the Alps in June",
         "我妹妹住在杭州", "我对花生过敏", "The meeting moved to Tuesday", "I prefer tea to coffee"]
CATEGORIES = [c.value for c in Category]

add = st.tuples(st.just("add"), st.sampled_from(TEXTS), st.sampled_from(["episodic", "semantic"]),
                st.integers(1_600_000_000, 1_800_000_000), st.sampled_from(["c1", "c2"]))
update = st.tuples(st.just("update"), st.integers(0, 50), st.sampled_from(TEXTS))
delete = st.tuples(st.just("delete"), st.integers(0, 50))
curate = st.tuples(st.just("curate"), st.integers(0, 50), st.one_of(st.none(), st.sampled_from(CATEGORIES)),
                   st.one_of(st.none(), st.floats(0, 1)))
operations = st.lists(st.one_of(add, update, delete, curate), min_size=1, max_size=6)


def _seen(memory: Memory, user: str) -> Counter:
    return Counter((r.text, r.memory_type.value, r.ts, r.chat_id, r.who, r.life.category.value, r.life.state.value)
                   for r in memory.get_all(user))


def _apply(memory: Memory, user: str, op: tuple, ids: list[int]) -> int:
    """Run one operation (an add where there is nothing to act on); the id of the memory it touched."""
    if op[0] == "add" or not ids:
        text, mtype, ts, chat = op[1:] if op[0] == "add" else (TEXTS[0], "episodic", 1_700_000_000, "c1")
        mid = memory.add(text, user_id=user, chat_id=chat, memory_type=mtype, ts=ts).ids[0]
        ids.append(mid)
        return mid
    mid = ids[op[1] % len(ids)]
    if op[0] == "update":
        memory.update(mid, op[2], user_id=user)
    elif op[0] == "delete":
        memory.delete(mid, user)
        ids.remove(mid)
    else:
        category, importance = op[2], op[3]
        memory.curate(mid, user, category=category, importance=importance if importance is not None or category else 0.5)
    return mid


@settings(max_examples=20, deadline=None)
@given(ops=operations)
def test_undoing_the_last_event_restores_the_visible_state_before_it(memory: Memory, ops: list[tuple]):
    user = f"u-{uuid.uuid4().hex[:12]}"
    ids: list[int] = []
    for op in ops[:-1]:
        _apply(memory, user, op, ids)
    before = _seen(memory, user)
    earlier = {e.event_id for i in ids for e in memory.history(i, user)}
    touched = _apply(memory, user, ops[-1], ids)
    event = memory.history(touched, user)[-1]
    if event.event_id in earlier:  # an update or curate that changed nothing records nothing
        assert ops[-1][0] in ("update", "curate") and _seen(memory, user) == before
        return
    result = memory.undo(event.event_id, user)
    assert result.event_id == event.event_id and result.action is event.action
    assert _seen(memory, user) == before
    undo_events = [e for i in {touched, *result.memory_ids} for e in memory.history(i, user) if e.actor == "undo"]
    assert undo_events and all(e.details["undo_of"] == event.event_id for e in undo_events)
