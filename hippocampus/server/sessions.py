"""The Web UI's login sessions: an opaque random id in the browser, the tenant it stands for here.

The browser never holds the API key: logging in trades it for `secrets.token_urlsafe(32)`, which
this table maps to the tenant until it expires or the user logs out (revoked here, so a copied
cookie is worthless afterwards). Each session is bound to the key that opened it by the key's
fingerprint (its SHA-256, never the key): a reload of the keys ends every session whose key is no
longer in force, a key rotated under the same name and users included (issue 57). The table lives in the process's memory: a restart ends every
session, and the users log in again. Its size is bounded, and per tenant (issue 42): one tenant's
101st login ends that tenant's oldest session, and when the whole table is full the oldest session
of the tenant holding the most goes, so no tenant's logins can push another tenant's session out.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .auth import Tenant

COOKIE = "hippocampus_ui_session"
SECURE_COOKIE = "__Host-hippocampus_ui_session"  # the prefix makes browsers require Secure, no Domain, path /
DEFAULT_LIFETIME_S = 12 * 3600
MAX_SESSIONS = 10_000
MAX_PER_TENANT = 100  # one key's live logins: browsers, devices and tabs of the people sharing it


@dataclass(frozen=True)
class Session:
    """One login: who it is, when it began and when it ends (epoch seconds)."""

    tenant: Tenant
    created: float
    expires: float
    binding: str = ""  # sha256 of the browser's own binding value (ui_support.bound); "" for none
    key: str = ""  # the fingerprint of the key that opened it (KeyRing.identify); "" on a service without keys


class Sessions:
    """Session id -> Session, thread-safe (routes run in a thread pool); `clock` is injectable so a
    test can move time instead of sleeping."""

    def __init__(self, lifetime_s: float = DEFAULT_LIFETIME_S, max_sessions: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.time, per_tenant: int = MAX_PER_TENANT):
        if lifetime_s <= 0 or max_sessions <= 0 or per_tenant <= 0:
            raise ValueError("a session lifetime and the table's sizes must be positive")
        self.lifetime_s, self.max_sessions, self.clock = float(lifetime_s), int(max_sessions), clock
        self.per_tenant = int(per_tenant)
        self._table: OrderedDict[str, Session] = OrderedDict()  # oldest first
        self._of: dict[Tenant, OrderedDict[str, None]] = {}  # each tenant's session ids, oldest first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._table)

    def open(self, tenant: Tenant, binding: str = "", key: str = "") -> str:
        """A new session for `tenant`; its id is the only thing the browser gets. A tenant at its
        limit loses its own oldest session; a full table, the oldest of the tenant holding the most.
        `binding` ties it to the browser that logged in (ui_support.bound); `key` is the fingerprint of
        the key that opened it (KeyRing.identify), which must stay in force for it to live."""
        sid = secrets.token_urlsafe(32)
        now = self.clock()
        with self._lock:
            self._drop_expired(now)
            mine = self._of.get(tenant)
            while mine and len(mine) >= self.per_tenant:
                self._remove(next(iter(mine)))
            while len(self._table) >= self.max_sessions:
                biggest = max(self._of.values(), key=len)
                self._remove(next(iter(biggest)))
            self._table[sid] = Session(tenant=tenant, created=now, expires=now + self.lifetime_s, binding=binding,
                                     key=key)
            self._of.setdefault(tenant, OrderedDict())[sid] = None
        return sid

    def get(self, sid: str | None) -> Session | None:
        """The live session with this id; None for an unknown, revoked or expired one."""
        if not sid:
            return None
        with self._lock:
            session = self._table.get(sid)
            if session is not None and session.expires <= self.clock():
                self._remove(sid)
                session = None
        return session

    def revoke(self, sid: str | None) -> bool:
        """End a session (logout); True when there was one."""
        with self._lock:
            return self._remove(sid) if sid else False

    def retain(self, keep: Callable[[Session], bool]) -> int:
        """End every session `keep` refuses (one whose key a reload removed); how many ended."""
        with self._lock:
            gone = [sid for sid, session in self._table.items() if not keep(session)]
            for sid in gone:
                self._remove(sid)
        return len(gone)

    def count(self, tenant: Tenant) -> int:
        """How many sessions `tenant` holds (expired ones included until they are dropped)."""
        with self._lock:
            return len(self._of.get(tenant, ()))

    def _remove(self, sid: str) -> bool:
        session = self._table.pop(sid, None)
        if session is None:
            return False
        mine = self._of.get(session.tenant)
        if mine is not None:
            mine.pop(sid, None)
            if not mine:
                del self._of[session.tenant]
        return True

    def _drop_expired(self, now: float) -> None:
        """Every session has the same lifetime, so the expired ones are the oldest, at the front."""
        while self._table and next(iter(self._table.values())).expires <= now:
            self._remove(next(iter(self._table)))
