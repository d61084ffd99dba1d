"""Leases kept in the store itself (`<collection>_leases`), so that several processes sharing one
Milvus server agree on who does what: the id worker numbers (store/ids.py) and background work
(consolidation, decay, pending decisions) for a user or for every user.

Milvus has no transactions or compare-and-set, so a claim is: insert a claim row of one's own (a
random nonce in its key), then read every live claim of the group; the claim is won only when no
*other* conflicting claim is seen (conflicting: the same name, or either name is "*", every user).
Why at most one of two conflicting claimants wins, on a store where a read sees every write that
finished before it (milvus-lite; Milvus collections made Strong, store/capabilities.py): each one
inserts before it reads, so whichever reads last sees the other's row, unless that row was
deleted (a loser withdraws; a holder releases) or had expired. Two losers both retry (random
back-off). A winner then bumps the name's fencing token (a `fence` row; only a winner writes it).

Expiry: a claim row carries expires_at (wall clock, ms). The holder renews it every ttl/3 (a
daemon thread) and trusts it only until `ttl - skew` after it *started* claiming or renewing
(monotonic clock); others treat it as expired only `skew` after expires_at. With clocks within
SKEW_S of each other, a holder stops before anyone else may start. `Lease.check()` is the fencing
check a job makes before each destructive step: still in time, its row still there, its token still
the name's newest and no conflicting confirmed claim: else LeaseLost and the step is not taken.

A local milvus-lite path is one process by construction (its directory lock): `LocalLeases`
(store/leases_local.py) keeps the same interface in memory and costs nothing.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import StoreError
from . import filters as F
from .schema import leases_schema

log = logging.getLogger(__name__)

ALL = "*"  # the name of a lease over every user
JOBS = "jobs"  # background work: consolidation, decay, pending decisions
WORKERS = "workers"  # id worker numbers (store/ids.py)
TTL_S = float(os.environ.get("HIPPOCAMPUS_LEASE_TTL_S", "30"))  # tests shorten it to see an expiry
SKEW_S = float(os.environ.get("HIPPOCAMPUS_LEASE_SKEW_S", str(min(2.0, TTL_S / 6))))  # assumed largest clock difference
WAIT_S = 600.0  # how long a run that waits (the API's) waits for a lease before LeaseHeld


class LeaseHeld(StoreError):
    """Another process holds the lease (its owner and what it does are in the message)."""

    def __init__(self, message: str, holder: str = ""):
        super().__init__(message)
        self.holder = holder


class LeaseLost(StoreError):
    """This process no longer holds its lease (expired, or taken over): the step was not taken."""


class Host(Protocol):
    """What the lease table uses of its MilvusStore (store/milvus.py)."""

    uri: str
    collection: str
    capabilities: Any
    client: Any
    _lock: threading.RLock

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any: ...
    def _create_collection(self, name: str, **kwargs: Any) -> None: ...


def default_owner() -> str:
    """Who this process is, as other replicas see it: host, pid and a random tag (pids repeat)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"


def conflicts(a: str, b: str) -> bool:
    return a == b or ALL in (a, b)


@dataclass
class Lease:
    """A lease this process holds: `check()` before every destructive step."""

    group: str
    name: str
    what: str
    owner: str
    nonce: str
    token: int
    valid_until: float  # time.monotonic() after which this process no longer trusts it
    table: Any = field(repr=False, default=None)
    depth: int = 1
    lost: bool = False

    @property
    def key(self) -> str:
        return _claim_key(self.group, self.name, self.nonce)

    def check(self) -> None:
        """The fencing check: raise LeaseLost unless this lease is still ours (see the module doc)."""
        self.table.check(self)


def _claim_key(group: str, name: str, nonce: str) -> str:
    return f"c|{group}|{name}|{nonce}"


def _fence_key(group: str, name: str) -> str:
    return f"f|{group}|{name}"


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Held:
    """This process' leases, per thread (a thread holding a lease may take it again, or a lease it
    covers: holding "*" covers every user), and the renewal thread."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.by_thread: dict[tuple[int, str], list[Lease]] = {}

    def covering(self, group: str, name: str) -> Lease | None:
        with self.lock:
            for lease in self.by_thread.get((threading.get_ident(), group), []):
                if lease.name in (name, ALL) and not lease.lost:
                    return lease
        return None

    def add(self, lease: Lease) -> None:
        with self.lock:
            self.by_thread.setdefault((threading.get_ident(), lease.group), []).append(lease)

    def remove(self, lease: Lease) -> None:
        with self.lock:
            for key, leases in list(self.by_thread.items()):
                if lease in leases:
                    leases.remove(lease)
                    if not leases:
                        del self.by_thread[key]

    def all(self) -> list[Lease]:
        with self.lock:
            return [lease for leases in self.by_thread.values() for lease in leases]


class LeaseTable:
    """Claims, renewals, checks and releases over `<collection>_leases` on a shared Milvus."""

    shared = True

    def __init__(self, host: Host, owner: str | None = None, ttl_s: float = TTL_S, skew_s: float = SKEW_S):
        self.host = host
        self.name = f"{host.collection}_leases"
        self.owner = owner or default_owner()
        self.ttl_s, self.skew_s = ttl_s, skew_s
        self._ready = False
        self._held = _Held()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._detached: list[Lease] = []  # leases held by no thread (the id worker number)

    # ------------------------------------------------------------------ the collection
    def ensure(self) -> None:
        """Make the collection on first use; another process making it at the same moment is fine
        (MilvusStore._create_collection is create-if-missing, idempotent under races)."""
        if self._ready:
            return
        h = self.host
        try:
            with h._lock:
                schema, index = leases_schema(h.client)
                h._create_collection(self.name, schema=schema, index_params=index, **h.capabilities.create_kwargs())
        except Exception as exc:
            raise StoreError(f"cannot make the lease collection {self.name!r}: {exc}", uri=h.uri) from exc
        self._ready = True

    def _rows(self, group: str) -> list[dict[str, Any]]:
        with self.host._lock:
            return list(self.host._call("query", self.name, filter=F.eq("grp", group), output_fields=_FIELDS, limit=16384))

    def _put(self, row: dict[str, Any]) -> None:
        with self.host._lock:
            self.host._call("upsert", self.name, data=[{**row, "_v": [0.0, 0.0]}])

    def _delete(self, keys: list[str]) -> None:
        if keys:
            with self.host._lock:
                self.host._call("delete", self.name, filter=F.in_("key", keys))

    # ------------------------------------------------------------------ claims
    def try_acquire(self, group: str, name: str, what: str, detached: bool = False) -> Lease | str:
        """The lease, or (a string) who holds it: one claim attempt, no waiting."""
        if not detached:
            mine = self._held.covering(group, name)
            if mine is not None:
                mine.depth += 1
                return mine
        self.ensure()
        nonce = secrets.token_hex(8)
        started, now = time.monotonic(), _now_ms()
        claim = {"key": _claim_key(group, name, nonce), "grp": group, "name": name, "kind": "claim", "owner": self.owner,
                 "what": what, "token": 0, "claimed_at": now, "expires_at": now + int(self.ttl_s * 1000)}
        self._put(claim)
        rows = self._rows(group)
        now = _now_ms()
        stale = [r["key"] for r in rows if r["kind"] == "claim" and r["expires_at"] + self.skew_s * 1000 < now]
        rivals = [r for r in rows if r["kind"] == "claim" and r["key"] != claim["key"] and r["key"] not in stale
                  and conflicts(r["name"], name)]
        self._delete(stale)  # expired claims of dead processes
        if rivals:
            self._delete([claim["key"]])
            held = sorted(rivals, key=lambda r: (-int(r["token"] > 0), r["claimed_at"]))[0]
            return f"{held['owner']} ({held['what']})"
        fence = next((r for r in rows if r["key"] == _fence_key(group, name)), None)
        token = (int(fence["token"]) if fence else 0) + 1
        self._put({**claim, "key": _fence_key(group, name), "kind": "fence", "token": token})
        self._put({**claim, "token": token})
        lease = Lease(group, name, what, self.owner, nonce, token, started + self.ttl_s - self.skew_s, table=self)
        if detached:
            self._detached.append(lease)
        else:
            self._held.add(lease)
        self._start_renewer()
        return lease

    def acquire(self, group: str, name: str, what: str, wait_s: float | None = 0.0) -> Lease:
        """The lease, waiting up to `wait_s` for its holder (None: WAIT_S); LeaseHeld after that."""
        deadline = time.monotonic() + (WAIT_S if wait_s is None else wait_s)
        delay = 0.05
        while True:
            got = self.try_acquire(group, name, what)
            if isinstance(got, Lease):
                return got
            if time.monotonic() >= deadline:
                raise LeaseHeld(f"{what} for {'every user' if name == ALL else repr(name)} is held by {got}", holder=got)
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())) * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)

    @contextmanager
    def hold(self, group: str, name: str, what: str, wait_s: float | None = 0.0) -> Iterator[Lease]:
        """Hold a lease for the block (released after it, even on error)."""
        lease = self.acquire(group, name, what, wait_s)
        try:
            yield lease
        finally:
            self.release(lease)

    def release(self, lease: Lease) -> None:
        lease.depth -= 1
        if lease.depth > 0:
            return
        self._held.remove(lease)
        if lease in self._detached:
            self._detached.remove(lease)
        lease.lost = True
        try:
            self._delete([lease.key])
        except StoreError:  # it expires on its own
            log.warning("could not release lease %s/%s; it expires in %.0f s", lease.group, lease.name, self.ttl_s)

    def check(self, lease: Lease) -> None:
        """Raise LeaseLost unless the lease is still ours: in time, our row there, our token the newest."""
        if lease.lost or time.monotonic() >= lease.valid_until:
            lease.lost = True
            raise LeaseLost(f"the {lease.what} lease for {lease.name!r} expired; another replica may run it now")
        rows = self._rows(lease.group)
        fence = next((r for r in rows if r["key"] == _fence_key(lease.group, lease.name)), None)
        ours = any(r["key"] == lease.key for r in rows)
        newer = [r for r in rows if r["kind"] == "claim" and r["key"] != lease.key and int(r["token"]) > 0
                 and conflicts(r["name"], lease.name) and r["expires_at"] + self.skew_s * 1000 >= _now_ms()]
        if not ours or newer or (fence is not None and int(fence["token"]) != lease.token):
            lease.lost = True
            who = newer[0]["owner"] if newer else (fence["owner"] if fence else "nobody")
            raise LeaseLost(f"the {lease.what} lease for {lease.name!r} was taken over by {who}; step not taken")

    def renew(self, lease: Lease) -> bool:
        """Extend a lease still in time; False when it is lost (a late renewal must not revive it)."""
        started = time.monotonic()
        if lease.lost or started >= lease.valid_until:
            lease.lost = True
            return False
        now = _now_ms()
        self._put({"key": lease.key, "grp": lease.group, "name": lease.name, "kind": "claim", "owner": lease.owner,
                   "what": lease.what, "token": lease.token, "claimed_at": now, "expires_at": now + int(self.ttl_s * 1000)})
        lease.valid_until = started + self.ttl_s - self.skew_s
        return True

    def _start_renewer(self) -> None:
        if self._renewer is not None and self._renewer.is_alive():
            return
        self._renewer = threading.Thread(target=self._renew_loop, name="lease-renewal", daemon=True)
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            for lease in self._held.all() + list(self._detached):
                try:
                    self.renew(lease)
                except Exception as exc:  # the store unreachable: try again; the lease lapses if it stays so
                    log.warning("renewing lease %s/%s failed: %s", lease.group, lease.name, exc)

    # ------------------------------------------------------------------ views
    def holders(self, group: str | None = None) -> list[dict[str, Any]]:
        """Live confirmed claims (who holds what), for `stats`."""
        if not self._ready:
            with self.host._lock:
                if not self.host._call("has_collection", self.name):
                    return []
            self.ensure()
        now = _now_ms()
        out = []
        for grp in ([group] if group else [JOBS, WORKERS]):
            out += [{"group": r["grp"], "name": r["name"], "owner": r["owner"], "what": r["what"], "token": int(r["token"]),
                     "expires_in_s": round((r["expires_at"] - now) / 1000, 1)}
                    for r in self._rows(grp) if r["kind"] == "claim" and int(r["token"]) > 0 and r["expires_at"] >= now]
        return out

    def close(self) -> None:
        """Stop renewing and release what is held (the id worker number included)."""
        self._stop.set()
        for lease in self._held.all() + list(self._detached):
            lease.depth = 1
            try:
                self.release(lease)
            except Exception:  # pragma: no cover - best effort: they expire
                pass


_FIELDS = ["key", "grp", "name", "kind", "owner", "what", "token", "claimed_at", "expires_at"]
