"""Merges idempotent and fenced (consolidation/merges.py, merged_row.merge_key, store/leases.py), on a
real milvus-lite store: the same pair judged twice ends in one merged record and one history; a run
whose lease is lost deletes nothing and rolls nothing back, and the next run finishes its merge."""

from __future__ import annotations

import threading
import uuid

import pytest

from hippocampus import Memory
from hippocampus.consolidation.job import ConsolidationJob
from hippocampus.consolidation.merged_row import merge_key
from hippocampus.models import HistoryAction
from hippocampus.store.leases import JOBS, LeaseLost
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import episode_row, merge_union, scripted_chat, vector_pair
from tests.scale.history_check import check_users

T0 = 1_767_225_600


@pytest.fixture(scope="module")
def mem(shared_db):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"idem_{uuid.uuid4().hex[:10]}", embedder=DeterministicEmbedder(8, lexical=False),
               llm=scripted_chat({"MergeResult": merge_union}), t_merge_high=0.85, t_amb_low=0.65)
    yield m
    m.close()


def _pair(mem: Memory) -> tuple[str, list[int]]:
    user = f"u-{uuid.uuid4().hex[:8]}"
    va, vb = vector_pair(0.95, seed=7)
    return user, mem.store.insert([episode_row(user, "first telling", va, T0), episode_row(user, "second telling", vb, T0 + 60)])


def _merged_records(mem: Memory, user: str) -> list:
    return [r for r in mem.get_all(user) if r.metadata.get("merged_from_ids")]


def _creations(mem: Memory, record_id: int, user: str) -> int:
    return sum(1 for e in mem.history(record_id, user) if e.action is HistoryAction.MERGED and "merged_from_ids" in e.details)


class _Stop(Exception):
    pass


def test_the_same_pair_judged_twice_is_merged_once(mem: Memory):
    user, ids = _pair(mem)
    a, b = (mem.get(i, user) for i in ids)
    job = ConsolidationJob.from_context(mem.ctx)

    def crash(name: str) -> None:  # a crash right after the merged record landed, its sources still there
        if name == "merge_inserted":
            raise _Stop

    job.checkpoint = crash  # type: ignore[method-assign]
    with pytest.raises(_Stop):
        job.merges.write(a, b, "first telling / second telling", "", "", {})
    (pending,) = _merged_records(mem, user)
    assert pending.metadata["merge_key"] == merge_key(ids) and pending.metadata["merge_pending"]
    job.checkpoint = lambda name: None  # type: ignore[method-assign]
    assert job.merges.write(a, b, "first telling / second telling", "", "", {}) is False  # judged again: the key is there
    mem.consolidate(user_id=user)  # the next run finishes the first merge
    (merged,) = _merged_records(mem, user)
    assert merged.id == pending.id and "merge_pending" not in merged.metadata
    assert {r.id for r in mem.get_all(user)} == {merged.id} and _creations(mem, merged.id, user) == 1


def test_a_run_that_lost_its_lease_deletes_nothing_and_the_next_finishes(mem: Memory):
    user, ids = _pair(mem)
    a, b = (mem.get(i, user) for i in ids)
    job = ConsolidationJob.from_context(mem.ctx)
    checks: list[str] = []

    def lost() -> None:  # the lease lapsed after the merged record was written: the sources' delete is refused
        checks.append("check")
        if len(checks) > 1:
            raise LeaseLost("taken over")

    job.fence = lost
    with pytest.raises(LeaseLost):
        job.merges.write(a, b, "first telling / second telling", "", "", {})
    (pending,) = _merged_records(mem, user)
    assert pending.metadata["merge_pending"] and {r.id for r in mem.get_all(user)} == {*ids, pending.id}  # nothing deleted or undone
    mem.consolidate(user_id=user)
    assert {r.id for r in mem.get_all(user)} == {pending.id} and _creations(mem, pending.id, user) == 1
    assert check_users(mem.store, [user]), check_users(mem.store, [user]).summary()  # history replays to this state


def test_a_scheduled_run_skips_a_user_another_holds_and_a_manual_run_waits(mem: Memory):
    """server/jobs.py over the store's leases (in memory on a local path; the same calls on a server)."""
    from hippocampus.server.jobs import Consolidations
    from hippocampus.server.metrics import ServiceMetrics

    jobs = Consolidations(mem, ServiceMetrics(dict))
    held, release = threading.Event(), threading.Event()

    def other() -> None:  # another holder of alice's lease (another replica, on a server)
        with mem.store.leases.hold(JOBS, "alice", "consolidate"):
            held.set()
            release.wait(60)

    holder = threading.Thread(target=other)
    holder.start()
    assert held.wait(60)
    jobs.run(["alice"], trigger="cron")
    assert jobs.runs[-1]["outcome"] == "ok" and jobs.runs[-1]["skipped"] == [f"alice: held by {mem.store.leases.owner} (consolidate)"]
    jobs.decay("decay-cron")  # every user includes alice: skipped too
    assert jobs.runs[-1]["outcome"] == "skipped" and "held by" in jobs.runs[-1]["error"]
    waiter = threading.Thread(target=jobs.run, args=(["alice"], "api"))
    waiter.start()
    release.set()  # a manual run waits for the holder instead of skipping
    waiter.join(60)
    holder.join(60)
    assert jobs.runs[-1]["trigger"] == "api" and jobs.runs[-1]["outcome"] == "ok" and "skipped" not in jobs.runs[-1]
