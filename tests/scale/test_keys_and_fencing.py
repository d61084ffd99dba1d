"""Distillation and compression idempotent, supersede and compress fenced (issue 34), and the
history-replay checker (history_check.py) shown to catch what it is for, on a real milvus-lite store.

A "second replica" here is a second job over the same store with its own write lock, run inside the
first one's fencing check, i.e. in the window after the first looked for existing work and before it
writes: without the keys both would write."""

from __future__ import annotations

import threading
import uuid

import pytest

from hippocampus import Memory
from hippocampus.consolidation.job import ConsolidationJob
from hippocampus.lifecycle.compress import COMPRESS, KEY, run_compress
from hippocampus.lifecycle.policy import DAY, decay_table
from hippocampus.lifecycle.supersede import CHECKED, run_supersede
from hippocampus.models import MemoryType, State, now_ts
from hippocampus.processors.compressor import FactCompressor
from hippocampus.processors.contradiction import ContradictionJudge
from hippocampus.store import filters as F
from hippocampus.store.leases import LeaseLost
from hippocampus.testing import DeterministicEmbedder
from tests.scale.history_check import Replayed, check_users, replay

ONE_TOPIC = COMPRESS.model_copy(update={"similarity": 0.0, "similarity_cjk": 0.0})  # the test embedder is no topic model
COFFEE = ["The user drinks coffee every morning", "The user drinks 2 cups of coffee a day", "The user drinks coffee with oat milk",
          "The user drinks coffee at the Blue Bottle cafe", "The user drinks decaf coffee after 4pm"]


@pytest.fixture(scope="module")
def mem(shared_db):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"keys_{uuid.uuid4().hex[:10]}", embedder=DeterministicEmbedder())
    yield m
    m.close()


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def _lost() -> None:
    raise LeaseLost("taken over")


def test_a_fact_distilled_by_two_runs_at_once_is_written_once(mem: Memory):
    user = _user()
    mem.add("My sister Ana lives in Lisbon and she has two cats.", user_id=user, infer=False)
    first = ConsolidationJob.from_context(mem.ctx)
    other = ConsolidationJob(mem.store, mem.embedder, mem.llm, mem.config)  # another replica: its own lock
    made: list[int] = []

    def window() -> None:  # the other run distils the same episode after this one looked for twins
        if not made:
            made.append(other.run(user).semantic_created)

    first.fence = window
    assert first.run(user).semantic_created == 0 and made == [1]
    facts = mem.get_all(user, memory_type="semantic")
    assert len(facts) == 1 and facts[0].metadata["distill_key"]
    report = check_users(mem.store, [user])
    assert report, report.summary()


def test_supersede_and_compress_write_nothing_once_the_lease_is_lost(mem: Memory):
    user = _user()
    ids = [mem.add(t, user_id=user, memory_type="semantic", ts=now_ts() - 100 + i).ids[0] for i, t in enumerate(COFFEE)]
    with pytest.raises(LeaseLost):
        run_supersede(mem.store, mem.ctx.write_lock, lambda: ContradictionJudge(mem.llm), user, now_ts(), decay_table("default"), fence=_lost)
    assert not any(r.metadata.get(CHECKED) for r in mem.get_all(user))  # nothing marked
    later = now_ts() + 40 * DAY
    with pytest.raises(LeaseLost):
        run_compress(mem.store, mem.embedder, mem.ctx.write_lock, lambda: FactCompressor(mem.llm), user, later, ONE_TOPIC, fence=_lost)
    assert sorted(r.id for r in mem.get_all(user)) == sorted(ids)  # no output written, no source archived
    assert all(r.life.state is State.ACTIVE for r in mem.get_all(user))


def test_a_group_compressed_by_two_runs_at_once_is_compressed_once(mem: Memory):
    user = _user()
    ids = [mem.add(t, user_id=user, memory_type="semantic", ts=now_ts() - 100 + i).ids[0] for i, t in enumerate(COFFEE)]
    later = now_ts() + 40 * DAY
    other: list[int] = []

    def window() -> None:  # another replica compresses the same group after this one re-read it
        if not other:
            other.append(run_compress(mem.store, mem.embedder, threading.Lock(), lambda: FactCompressor(mem.llm), user, later, ONE_TOPIC).created)

    run_compress(mem.store, mem.embedder, mem.ctx.write_lock, lambda: FactCompressor(mem.llm), user, later, ONE_TOPIC, fence=window)
    assert other and other[0] >= 1
    rows = mem.store.query(F.and_(F.eq("user_id", user), F.eq("memory_type", MemoryType.SEMANTIC.value)), ["id", "metadata"])
    outputs = [r for r in rows if (r["metadata"] or {}).get(KEY)]
    assert len(outputs) == other[0]  # only the other run's outputs; this one finished with them
    assert all(r["metadata"]["life"]["state"] == "archived" for r in rows if int(r["id"]) in ids)
    report = check_users(mem.store, [user])
    assert report, report.summary()


def test_the_history_checker_catches_writes_without_history_and_double_merges(mem: Memory):
    assert replay([{"memory_id": 1, "action": "created", "new_text": "a"}, {"memory_id": 1, "action": "updated", "new_text": "b"},
                   {"memory_id": 2, "action": "merged", "details": {"merged_into": 3}},
                   {"memory_id": 3, "action": "merged", "new_text": "m", "details": {"merged_from_ids": [2, 4]}}]) == {
        1: Replayed(created=True, exists=True, text="b", events=2), 2: Replayed(merged_into=3, events=1),
        3: Replayed(created=True, exists=True, text="m", merged_from=[2, 4], events=1)}
    user = _user()
    kept = mem.add("I parked on level 3", user_id=user, infer=False).ids[0]
    gone = mem.add("I parked on level 4", user_id=user, infer=False).ids[0]
    mem.update(kept, "I parked on level 5", user_id=user)
    assert check_users(mem.store, [user]), check_users(mem.store, [user]).summary()
    row = {"user_id": user, "memory_type": "episodic", "ts": now_ts(), "chat_id": "c", "who": user, "text": "twin",
           "hit_count": 0, "metadata": {"merged_from_ids": [kept, gone], "merge_key": "k1"}, "vector": mem.embedder.encode(["twin"])[0].tolist()}
    mem.store.insert([row, row])  # two merged records of one pair, written around history
    mem.store.delete(F.eq("id", gone))  # a memory removed without an event
    problems = check_users(mem.store, [user]).problems
    assert sum("history never created it" in p for p in problems) == 2
    assert any(f"memory {gone} is gone without" in p for p in problems)
    assert any("share merge_key k1" in p for p in problems)
    assert any(f"merged {kept}, which is still there" in p for p in problems)


def test_an_update_made_while_consolidation_works_is_never_undone(mem: Memory):
    """Found by the history replay in the replica harness: the distillation's `distilled` mark was written
    from the text read before an update made through another replica, undoing it without an event."""
    user = _user()
    (eid,) = mem.add("My brother Leo moved to Porto last spring.", user_id=user, infer=False).ids
    job = ConsolidationJob(mem.store, mem.embedder, mem.llm, mem.config)

    def edit(name: str) -> None:  # another replica's update, after this run read the episode
        if name == "semantic_inserted":
            mem.update(eid, "My brother Leo moved to Braga last spring.", user_id=user)

    job.checkpoint = edit  # type: ignore[method-assign]
    job.run(user)
    assert mem.get(eid, user_id=user).text == "My brother Leo moved to Braga last spring."
    report = check_users(mem.store, [user])
    assert report, report.summary()
