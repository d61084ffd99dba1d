"""Never a row gone without its history event: a fault injected before and after each store call of
delete, delete_many, update, decay's forget and a consolidation merge leaves either the old state (the rows, no new event)
or the new state with its events, and undoing such an event brings the rows back.

The store is real milvus-lite; the fault is an exception raised by the store object itself, once,
at the n-th call (before the call runs, or after it landed), for n = 1, 2, ... until a run makes
fewer calls than n."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hippocampus import Memory
from hippocampus.consolidation.job import ConsolidationJob
from hippocampus.models import HistoryAction
from hippocampus.store import filters as F
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import episode_row, merge_union, scripted_chat, vector_pair

T0 = 1_767_225_600
WATCHED = ("query", "insert", "upsert", "delete", "add_history", "delete_history", "history", "vectors")


class Boom(RuntimeError):
    """The injected store failure."""


@pytest.fixture(scope="module")
def mem(shared_db) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"dh_{uuid.uuid4().hex[:10]}",
               embedder=DeterministicEmbedder(8, lexical=False), llm=scripted_chat(), t_merge_high=0.85, t_amb_low=0.65)
    yield m
    m.close()


@contextmanager
def fault_at(store: Any, n: int, after: bool, armed: Callable[[], bool] = lambda: True) -> Iterator[dict[str, Any]]:
    """Make the store's n-th watched call (counted while `armed()`) raise Boom, before it runs or after."""
    state: dict[str, Any] = {"calls": 0, "hit": None}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if state["hit"] is not None or not armed():
                return fn(*args, **kwargs)
            state["calls"] += 1
            if state["calls"] != n:
                return fn(*args, **kwargs)
            state["hit"] = f"{'after' if after else 'before'} {name}"
            if after:
                fn(*args, **kwargs)
            raise Boom(f"injected {state['hit']} (call {n})")
        return call

    for name in WATCHED:
        setattr(store, name, wrap(name, getattr(store, name)))
    try:
        yield state
    finally:
        for name in WATCHED:
            delattr(store, name)  # the instance's wrappers go; the class' methods answer again


def every_fault(setup: Callable[[], Any], op: Callable[[Any], None], check: Callable[[Any, bool], None],
                store: Any, armed: Callable[[], bool] = lambda: True) -> list[str]:
    """Run `op` on a fresh `setup()` once per fault point and `check(ctx, completed)` after each."""
    seen = []
    for after in (False, True):
        n = 1
        while True:
            ctx = setup()
            with fault_at(store, n, after, armed) as state:
                try:
                    op(ctx)
                    completed = True
                except Boom:
                    completed = False
            check(ctx, completed)
            if state["hit"] is None:
                assert completed
                break
            seen.append(state["hit"])
            n += 1
    return seen


def _events(mem: Memory, user: str, action: HistoryAction, memory_id: int | None = None) -> list[dict[str, Any]]:
    return [e for e in mem.store.history(F.eq("user_id", user))
            if e["action"] == action.value and (memory_id is None or e["memory_id"] == memory_id)]


def _texts(mem: Memory, user: str) -> dict[int, str]:
    return {r.id: r.text for r in mem.get_all(user)}


# ------------------------------------------------------------------ delete
def test_delete_keeps_its_history_at_every_fault(mem):
    def setup():
        user = f"d-{uuid.uuid4().hex[:8]}"
        gone, kept = mem.add_many([{"text": "the memory to delete", "user_id": user}, {"text": "a neighbour", "user_id": user}])
        return user, gone, kept

    def check(ctx, completed):
        user, gone, kept = ctx
        rows, deleted = _texts(mem, user), _events(mem, user, HistoryAction.DELETED, gone)
        assert rows.get(kept) == "a neighbour"
        if gone in rows:  # the old state: no event
            assert not completed and deleted == []
            return
        assert len(deleted) == 1 and deleted[0]["details"]["row"]["text"] == "the memory to delete"  # the new state, with its event
        back = mem.undo(deleted[0]["event_id"], user)
        assert sorted(_texts(mem, user).values()) == ["a neighbour", "the memory to delete"] and back.memory_ids

    seen = every_fault(setup, lambda ctx: mem.delete(ctx[1], ctx[0]), check, mem.store)
    assert {"before add_history", "before delete", "after delete"} <= set(seen)


def test_delete_many_keeps_its_history_at_every_fault(mem):
    def setup():
        user = f"b-{uuid.uuid4().hex[:8]}"
        ids = mem.add_many([{"text": f"batch memory {i}", "user_id": user} for i in range(3)])
        return user, ids

    def check(ctx, completed):
        user, ids = ctx
        rows, deleted = _texts(mem, user), _events(mem, user, HistoryAction.DELETED)
        if set(rows) == set(ids):
            assert not completed and deleted == []
            return
        assert rows == {} and sorted(e["memory_id"] for e in deleted) == sorted(ids)
        for e in deleted:
            mem.undo(e["event_id"], user)
        assert sorted(_texts(mem, user).values()) == [f"batch memory {i}" for i in range(3)]

    seen = every_fault(setup, lambda ctx: mem.delete_many(ctx[1], ctx[0]), check, mem.store)
    assert any(s.startswith("before delete") for s in seen)


# ------------------------------------------------------------------ update (the old text lives on only in history)
def test_update_keeps_the_old_text_in_history_at_every_fault(mem):
    def setup():
        user = f"u-{uuid.uuid4().hex[:8]}"
        return user, mem.add("the old wording", user_id=user).ids[0]

    def check(ctx, completed):
        user, mid = ctx
        text, updated = mem.get(mid, user).text, _events(mem, user, HistoryAction.UPDATED, mid)
        if text == "the old wording":
            assert not completed and updated == []
            return
        assert text == "the new wording" and len(updated) == 1 and updated[0]["old_text"] == "the old wording"
        mem.undo(updated[0]["event_id"], user)
        assert mem.get(mid, user).text == "the old wording"

    seen = every_fault(setup, lambda ctx: mem.update(ctx[1], "the new wording", user_id=ctx[0]), check, mem.store)
    assert any(s.startswith("after upsert") for s in seen)


# ------------------------------------------------------------------ decay's forget
def test_forget_keeps_its_history_at_every_fault(mem):
    from hippocampus.models import now_ts

    later = now_ts() + 20 * 365 * 86400  # every unused memory's score is near 0 by then

    def setup():
        user = f"f-{uuid.uuid4().hex[:8]}"
        return user, mem.add_many([{"text": f"a passing remark {i}", "user_id": user} for i in range(2)])

    def check(ctx, completed):
        user, ids = ctx
        rows, forgotten = _texts(mem, user), _events(mem, user, HistoryAction.FORGOTTEN)
        if set(rows) == set(ids):
            assert not completed and forgotten == []
            return
        assert rows == {} and sorted(e["memory_id"] for e in forgotten) == sorted(ids)
        for e in forgotten:
            mem.undo(e["event_id"], user)
        assert sorted(_texts(mem, user).values()) == ["a passing remark 0", "a passing remark 1"]

    seen = every_fault(setup, lambda ctx: mem.decay(ctx[0], now=later), check, mem.store)
    assert any(s.startswith("before delete") for s in seen)


# ------------------------------------------------------------------ consolidation merge
def test_merge_keeps_its_history_at_every_fault(mem):
    armed = {"on": False}

    def merge_now(inputs: dict[str, Any]) -> str:
        armed["on"] = True  # count only the merge's own steps
        return merge_union(inputs)

    def job() -> ConsolidationJob:
        return ConsolidationJob(mem.store, mem.embedder, mem.llm, mem.config, write_lock=mem.ctx.write_lock)

    def setup():
        armed["on"] = False
        mem.llm = scripted_chat({"MergeResult": merge_now})
        user = f"m-{uuid.uuid4().hex[:8]}"
        va, vb = vector_pair(0.95, seed=7)
        ids = mem.store.insert([episode_row(user, "first telling", va, T0), episode_row(user, "second telling", vb, T0 + 60)])
        return user, ids

    def check(ctx, completed):
        armed["on"] = False
        user, (a, b) = ctx
        rows = {r.id: r for r in mem.get_all(user)}
        merged_events = _events(mem, user, HistoryAction.MERGED)
        if set(rows) == {a, b}:  # the old state: nothing merged, no merge in history
            assert not completed and merged_events == []
            return
        assert a not in rows and b not in rows and len(rows) == 1, f"half a merge: {sorted(rows)} of {a}, {b}"
        (merged,) = rows.values()
        if merged.metadata.get("merge_pending"):  # only the flag is left: the next run clears it
            job().run(user)
            merged = mem.get(merged.id, user)
            assert "merge_pending" not in merged.metadata
        into = [e for e in merged_events if e["memory_id"] == merged.id]
        assert len(into) == 1 and sorted(into[0]["details"]["merged_from_ids"]) == sorted([a, b])
        for source in (a, b):
            (event,) = [e for e in merged_events if e["memory_id"] == source]
            assert event["details"]["merged_into"] == merged.id and "row" in event["details"]
        mem.undo(next(e["event_id"] for e in merged_events if e["memory_id"] == a), user)
        assert sorted(_texts(mem, user).values()) == ["first telling", "second telling"]

    seen = every_fault(setup, lambda ctx: job().run(ctx[0]), check, mem.store, armed=lambda: armed["on"])
    assert any(s.startswith("before delete") for s in seen) and any(s.startswith("after insert") for s in seen)
