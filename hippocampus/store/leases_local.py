"""Leases for a local milvus-lite path (store/leases.py has the shared ones): its directory lock lets
one process open it, so the same interface is kept in memory, exclusive between this process'
threads and re-entrant within one, at no store cost."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

from .leases import ALL, WAIT_S, Lease, LeaseHeld, LeaseLost, LeaseTable, _Held, conflicts, default_owner


class LocalLeases:
    """The same interface for a local milvus-lite path, one process by construction: in memory."""

    shared = False

    def __init__(self, owner: str | None = None):
        self.owner = owner or default_owner()
        self._cond = threading.Condition()
        self._held = _Held()
        self._live: list[Lease] = []
        self._tokens: dict[tuple[str, str], int] = {}

    def try_acquire(self, group: str, name: str, what: str, detached: bool = False) -> Lease | str:
        with self._cond:
            mine = None if detached else self._held.covering(group, name)
            if mine is not None:
                mine.depth += 1
                return mine
            rival = next((lease for lease in self._live if lease.group == group and conflicts(lease.name, name)), None)
            if rival is not None:
                return f"{rival.owner} ({rival.what})"
            token = self._tokens[(group, name)] = self._tokens.get((group, name), 0) + 1
            lease = Lease(group, name, what, self.owner, secrets.token_hex(8), token, float("inf"), table=self)
            self._live.append(lease)
            if not detached:
                self._held.add(lease)
            return lease

    def acquire(self, group: str, name: str, what: str, wait_s: float | None = 0.0) -> Lease:
        deadline = time.monotonic() + (WAIT_S if wait_s is None else wait_s)
        with self._cond:
            while True:
                got = self.try_acquire(group, name, what)
                if isinstance(got, Lease):
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LeaseHeld(f"{what} for {'every user' if name == ALL else repr(name)} is held by {got}", holder=got)
                self._cond.wait(left)

    hold = LeaseTable.hold  # the same block: acquire, yield, release (only self.acquire/release are called)

    def release(self, lease: Lease) -> None:
        with self._cond:
            lease.depth -= 1
            if lease.depth > 0:
                return
            self._held.remove(lease)
            if lease in self._live:
                self._live.remove(lease)
            self._cond.notify_all()

    def check(self, lease: Lease) -> None:
        if lease not in self._live:
            raise LeaseLost(f"the {lease.what} lease for {lease.name!r} was released; step not taken")

    def holders(self, group: str | None = None) -> list[dict[str, Any]]:
        with self._cond:
            return [{"group": x.group, "name": x.name, "owner": x.owner, "what": x.what, "token": x.token, "expires_in_s": None}
                    for x in self._live if group in (None, x.group)]

    def close(self) -> None:
        with self._cond:
            self._live.clear()
            self._cond.notify_all()
