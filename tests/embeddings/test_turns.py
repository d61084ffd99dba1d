"""Turns between tenants (embeddings/turns.py, issue 57): the pure order with fake tenants, then the lock
with threads sequenced by its own count of waiters (no sleeps, no timing)."""

from __future__ import annotations

import threading

import pytest

from hippocampus.embeddings.turns import FairLock, Turns, as_tenant, current_tenant

WAIT_GUARD = 200_000  # 1 ms polls: a caller that never queues fails the test, never asserts speed


def _drain(turns: Turns) -> list[str]:
    out = []
    while (ticket := turns.pop()) is not None:
        out.append(str(ticket))
    return out


def test_one_tenant_is_served_in_its_order_of_arrival() -> None:
    turns = Turns()
    for n in range(4):
        turns.push("", f"t{n}")
    assert _drain(turns) == ["t0", "t1", "t2", "t3"] and len(turns) == 0


def test_tenants_take_turns_chunk_by_chunk() -> None:
    turns = Turns()
    for n in range(3):
        turns.push("a", f"a{n}")
    turns.push("b", "b0")
    turns.push("b", "b1")
    turns.push("c", "c0")
    assert _drain(turns) == ["a0", "b0", "c0", "a1", "b1", "a2"]


def test_a_tenant_that_arrives_goes_before_one_served_already() -> None:
    turns = Turns()
    for n in range(3):
        turns.push("a", f"a{n}")
    assert turns.pop() == "a0"  # a's chunk in progress; its next two already queued
    turns.push("b", "b0")  # another tenant's search arrives
    assert _drain(turns) == ["b0", "a1", "a2"]


def test_a_tenant_that_pauses_between_chunks_cannot_starve_a_waiting_one() -> None:
    """Single-request tenants a and b come back after each chunk; c's queue still gets every third turn."""
    turns = Turns()
    turns.push("c", "c0")
    turns.push("c", "c1")
    turns.push("a", "a0")
    turns.push("b", "b0")
    order = []
    for step in range(6):
        ticket = str(turns.pop())
        order.append(ticket)
        if ticket[0] in "ab":
            turns.push(ticket[0], f"{ticket[0]}{step + 1}")  # back for its next chunk at once
    assert [t[0] for t in order] == ["c", "a", "b", "c", "a", "b"]


def test_a_removed_ticket_is_never_granted() -> None:
    turns = Turns()
    turns.push("a", "a0")
    turns.push("b", "b0")
    turns.push("a", "a1")
    turns.remove("a", "a0")
    turns.remove("a", "gone")  # unknown: nothing happens
    assert _drain(turns) == ["a1", "b0"]  # a arrived first


def test_what_it_remembers_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Turns, "REMEMBERED", 3)
    turns = Turns()
    for n in range(10):
        turns.push(f"t{n}", n)
        turns.pop()
    turns.push("t0", "again")  # forgotten: counts as served longest ago
    turns.push("t9", "late")
    assert _drain(turns) == ["again", "late"]


def test_it_knows_whether_another_tenant_is_about() -> None:
    turns = Turns()
    turns.push("a", "a0", now=1.0)
    assert not turns.others("a", since=0.0)  # a alone
    assert turns.others("b", since=5.0)  # a waits: about, however long ago it asked
    assert turns.pop() == "a0"
    assert turns.others("b", since=1.0) and not turns.others("b", since=1.5)  # a asked at 1.0, waits no more
    turns.seen("b", 2.0)  # b let go at 2.0
    assert turns.others("a", since=1.5) and not turns.others("a", since=2.5) and not turns.others("b", since=1.5)


def _until(lock: FairLock, waiters: int) -> None:
    for _ in range(WAIT_GUARD):
        if lock.waiting() >= waiters:
            return
        threading.Event().wait(0.001)
    raise AssertionError(f"{waiters} callers never queued")


def test_the_lock_serves_another_tenant_before_the_holders_queued_chunks() -> None:
    lock, order = FairLock(), []

    def chunk(tenant: str, name: str) -> None:
        with as_tenant(tenant), lock:
            order.append(name)

    lock.acquire()  # tenant "a"'s chunk in progress (this thread: the default tenant is ""; the name is what counts)
    threads = [threading.Thread(target=chunk, args=("", f"a{n}")) for n in (1, 2)]
    for n, thread in enumerate(threads):
        thread.start()
        _until(lock, n + 1)
    other = threading.Thread(target=chunk, args=("b", "b0"))
    other.start()
    _until(lock, 3)
    lock.release()
    for thread in [*threads, other]:
        thread.join(60)
    assert order == ["b0", "a1", "a2"]
    assert not lock.locked() and lock.waiting() == 0


def test_a_caller_that_gives_up_leaves_the_queue() -> None:
    lock = FairLock()
    lock.acquire()
    with as_tenant("x"):
        assert lock.acquire(timeout=0.01) is False
    assert lock.waiting() == 0
    lock.release()
    assert not lock.locked()
    with lock:  # granted to the next caller at once
        assert lock.locked()


def test_the_default_tenant_is_the_library_one() -> None:
    assert current_tenant.get() == ""
    with as_tenant("k"):
        assert current_tenant.get() == "k"
    assert current_tenant.get() == ""


def test_chunks_are_small_only_while_another_tenant_is_about() -> None:
    now = [100.0]
    lock = FairLock(clock=lambda: now[0])
    with as_tenant("a"):
        with lock:  # a's own use does not count
            assert lock.chunk_size(8) == 8 and not lock.others_waiting()
    with as_tenant("b"), lock:  # b's search: let go at 100.0
        pass
    with as_tenant("a"):
        assert lock.others_waiting() and lock.chunk_size(8) == FairLock.SHARED_CHUNK and lock.chunk_size(1) == 1
        now[0] += FairLock.RECENT_S + 0.01
        assert not lock.others_waiting() and lock.chunk_size(8) == 8  # b gone for longer than RECENT_S
        lock.acquire()

    def b_searches() -> None:
        with as_tenant("b"), lock:
            pass

    waiter = threading.Thread(target=b_searches)
    waiter.start()
    _until(lock, 1)
    now[0] += 60  # b asked long ago, and waits still
    with as_tenant("a"):
        assert lock.chunk_size(8) == FairLock.SHARED_CHUNK
    lock.release()
    waiter.join(60)
    assert not lock.locked()
