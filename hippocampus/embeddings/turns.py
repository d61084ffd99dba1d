"""Turns between tenants (issue 57): the embedders and the store's writes are granted per chunk, one
tenant's waiting chunk at a time, the tenant served longest ago first. A lock granted first come, first
served let a tenant with several requests in flight queue several chunks ahead of another tenant's
search; with turns, that search waits for the chunk in progress and no more.

The tenant is the request's identity as the service knows it (server/guard.py sets `current_tenant`
for a request whose key it resolved); the library without a service has one tenant, "", and then
the lock is simply granted in the order it was asked for."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

current_tenant: ContextVar[str] = ContextVar("hippocampus_tenant", default="")
"""Whose work the current thread or task does: set per request by the service, "" elsewhere."""


@contextmanager
def as_tenant(name: str) -> Iterator[None]:
    """Run the block's embedding and writes as tenant `name` (the service's requests; tests)."""
    token = current_tenant.set(name)
    try:
        yield
    finally:
        current_tenant.reset(token)


class Turns:
    """The pure core: who is granted next. Each tenant's tickets wait in their order of arrival; among
    the tenants with a waiting ticket the one served longest ago goes first (one never served before
    any that was; ties in their order of arrival), so a tenant waits for at most one turn of each
    other waiting tenant. It also knows when each tenant last asked or let go (`seen`, `others`), for
    the size of the next chunk. No clock, no threads: the caller passes the time, and `FairLock` holds
    it under its own lock."""

    REMEMBERED = 4096  # tenants whose last turn is kept; one forgotten was served longest ago anyway

    def __init__(self) -> None:
        self._waiting: dict[str, deque[Hashable]] = {}  # insertion order: the order tenants arrived
        self._served: dict[str, int] = {}  # a tenant's last turn (a count), oldest first
        self._seen: dict[str, float] = {}  # when a tenant last asked or let go, least recent first
        self._grants = 0

    def push(self, tenant: str, ticket: Hashable, now: float = 0.0) -> None:
        """`ticket` waits behind `tenant`'s earlier ones; `now`: the time it asked."""
        self._waiting.setdefault(tenant, deque()).append(ticket)
        self.seen(tenant, now)

    def seen(self, tenant: str, now: float) -> None:
        """`tenant` used the lock at `now` (asked for it, or let it go)."""
        self._seen.pop(tenant, None)
        self._seen[tenant] = now
        if len(self._seen) > self.REMEMBERED:
            del self._seen[next(iter(self._seen))]

    def others(self, tenant: str, since: float) -> bool:
        """Whether a tenant other than `tenant` waits now, or asked or let go at `since` or later."""
        if any(t != tenant for t in self._waiting):
            return True
        for other in reversed(self._seen):  # most recent first: stops at the first one seen before `since`
            if self._seen[other] < since:
                return False
            if other != tenant:
                return True
        return False

    def remove(self, tenant: str, ticket: Hashable) -> None:
        """`ticket` no longer waits (its caller gave up)."""
        queue = self._waiting.get(tenant)
        if queue is not None and ticket in queue:
            queue.remove(ticket)
            if not queue:
                del self._waiting[tenant]

    def pop(self) -> Hashable | None:
        """The next ticket to grant, taken off its queue; None when nobody waits."""
        if not self._waiting:
            return None
        tenant = min(self._waiting, key=lambda t: self._served.get(t, -1))  # min keeps the first of equals
        queue = self._waiting[tenant]
        ticket = queue.popleft()
        if not queue:
            del self._waiting[tenant]
        self._grants += 1
        self._served.pop(tenant, None)
        self._served[tenant] = self._grants
        if len(self._served) > self.REMEMBERED:
            del self._served[next(iter(self._served))]
        return ticket

    def __len__(self) -> int:
        return sum(len(q) for q in self._waiting.values())


class FairLock:
    """A lock granted in turns between tenants (`Turns`), in order within one. An embedder and the
    writer take it once per chunk, so another tenant's search or write runs after the chunk in
    progress, however many chunks one tenant has queued. Also plain FIFO where there is one tenant
    (threading.Lock is not: the thread that releases it usually takes it straight back).

    The holder sizes its next chunk by who else is about (`others_waiting`, `chunk_size`): SHARED_CHUNK
    texts while another tenant waits or used the lock within RECENT_S seconds, the caller's full chunk
    otherwise (docs/decisions.md, "Adaptive chunks")."""

    RECENT_S = 1.0  # another tenant that let go this recently is likely back: a search loop's gap is HTTP and the store
    SHARED_CHUNK = 2  # texts per chunk while another tenant is about

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock`: seconds, for RECENT_S (tests pass their own)."""
        self._cv = threading.Condition(threading.Lock())
        self._turns = Turns()
        self._clock = clock
        self._owner: object | None = None  # the ticket holding it, or granted it and about to wake
        self._holder = ""  # the tenant of the ticket holding it

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait for this tenant's turn (current_tenant); False when `timeout` seconds pass first."""
        me, tenant = object(), current_tenant.get()
        with self._cv:
            self._turns.push(tenant, me, self._clock())
            if self._owner is None:
                self._owner = self._turns.pop()
            try:
                if self._cv.wait_for(lambda: self._owner is me, timeout):
                    self._holder = tenant
                    return True
            except BaseException:  # interrupted while waiting: as a timeout, then raised
                self._give_up(tenant, me)
                raise
            self._give_up(tenant, me)
            return False

    def _give_up(self, tenant: str, me: object) -> None:
        """Leave the queue, or pass on a turn granted meanwhile: never block the callers behind."""
        if self._owner is me:
            self._owner = self._turns.pop()
        else:
            self._turns.remove(tenant, me)
        self._cv.notify_all()

    def release(self) -> None:
        """Grant the next turn."""
        with self._cv:
            self._turns.seen(self._holder, self._clock())
            self._owner = self._turns.pop()
            self._cv.notify_all()

    def others_waiting(self) -> bool:
        """Whether a tenant other than the caller's (current_tenant) waits for the lock now, or asked for
        it or let it go within the last RECENT_S seconds: one that searches again and again is between two
        of its requests most of the time, and would otherwise find a full chunk in progress each time."""
        with self._cv:
            return self._turns.others(current_tenant.get(), self._clock() - self.RECENT_S)

    def chunk_size(self, asked: int) -> int:
        """How many texts (or rows) the caller's next chunk takes: at most `asked` and the caller's full
        chunk, SHARED_CHUNK while another tenant is about (`others_waiting`); at least 1."""
        return max(1, min(int(asked), self.SHARED_CHUNK) if self.others_waiting() else int(asked))

    def locked(self) -> bool:
        with self._cv:
            return self._owner is not None

    def waiting(self) -> int:
        """How many callers wait for it now (tests)."""
        with self._cv:
            return len(self._turns)
