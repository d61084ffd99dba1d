"""The replica harness (issue 34), shared by tests/scale/test_replicas.py (a `milvus-lite server`) and
`scripts/bench_replicas.py --check --uri ...` (any Milvus, e.g. the 2.3 standalone): three `serve`
replicas on one collection, clients spread over them, concurrent adds, updates, deletes and
consolidations for overlapping users, one replica SIGKILLed mid-consolidation and restarted.

Each phase returns its figures (merges reported, lost, repeated ids, double merges, history
problems) instead of asserting, so that the test asserts them at 0 and the script prints them."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from hippocampus.embeddings.offline import MODEL_NAME, OfflineEmbedder
from hippocampus.models import HistoryAction
from hippocampus.store import MilvusStore
from hippocampus.store import filters as F
from tests.scale.history_check import check_history
from tests.scale.support import Replica

LEASE_ENV = {"HIPPOCAMPUS_LEASE_TTL_S": "5"}  # a killed replica's lease lapses within the run
# yesterday noon, UTC: a pair told ten minutes apart is told on one day at whatever hour the run starts (events on
# different days never merge, consolidation/rules.py; "now - 2 h" put the pair across midnight from 01:50 to 02:00 UTC)
T0 = (int(time.time()) // 86400 - 1) * 86400 + 12 * 3600
LOAD_OPS = 80  # adds per load client at most (each third also updated, each fourth deleted)


class Cluster:
    """Replicas of one service on `uri`/`collection`, and what they acknowledged."""

    def __init__(self, uri: str, collection: str, base: Path, free_port: Any, env: dict[str, str] | None = None):
        self.uri, self.collection, self.base, self.free_port = uri, collection, base, free_port
        self.env = env or LEASE_ENV
        self.replicas: list[Replica] = []
        self.store: MilvusStore | None = None  # opened once the replicas made the collection
        self.acked: list[int] = []  # ids every replica acknowledged
        self.deleted: set[int] = set()  # acknowledged deletes
        self.updated: dict[int, str] = {}  # id -> the text of its last acknowledged update
        self._lock = threading.Lock()

    def start(self, n: int) -> Replica:
        return Replica(self.uri, self.collection, self.free_port(), self.base / f"replica{n}.log", env=self.env)

    def start_all(self, count: int, timeout: float = 180.0) -> float:
        """`count` replicas started at the same moment (they race to make whatever collection is missing);
        seconds until every one serves."""
        started = time.monotonic()
        self.replicas = [self.start(n) for n in range(count)]
        for r in self.replicas:
            r.wait_healthy(timeout)
        self.store = self.store or MilvusStore(self.uri, OfflineEmbedder().dim, MODEL_NAME, collection=self.collection)
        return time.monotonic() - started

    def stop(self) -> None:
        for r in self.replicas:
            r.stop()
        if self.store is not None:
            self.store.close()

    def add(self, replica: Replica, text: str, user: str, ts: int) -> int:
        r = httpx.post(replica.url + "/v1/memories", json={"messages": text, "user_id": user, "chat_id": "c1", "ts": ts}, timeout=120)
        r.raise_for_status()
        ids = r.json()["ids"]
        with self._lock:
            self.acked += ids
        return ids[0]

    def update(self, replica: Replica, memory_id: int, text: str, user: str) -> None:
        """An update; refused (404) when a consolidation merged the memory away meanwhile: not acknowledged."""
        r = httpx.patch(f"{replica.url}/v1/memories/{memory_id}", json={"text": text, "user_id": user}, timeout=120)
        if r.status_code != 404:
            r.raise_for_status()
            self.updated[memory_id] = text

    def delete(self, replica: Replica, memory_id: int, user: str) -> None:
        r = httpx.delete(f"{replica.url}/v1/memories/{memory_id}", params={"user_id": user}, timeout=120)
        if r.status_code != 404:
            r.raise_for_status()
            with self._lock:
                self.deleted.add(memory_id)

    def add_pair(self, user: str, first: Replica, second: Replica) -> tuple[int, int]:
        a = self.add(first, f"{user} went to the dentist this afternoon and got a filling", user, T0)
        b = self.add(second, f"{user} went to the dentist this afternoon and got a filling. It cost $120.", user, T0 + 600)
        return a, b


def consolidate(replica: Replica, user: str | None = None) -> dict[str, Any]:
    """One run's stats; a run stopped by its fencing check (503, LeaseLost: its lease lapsed and another
    replica took the user over) reports no merges and `lease_lost`."""
    r = httpx.post(replica.url + "/v1/consolidate", json={"user_id": user} if user else {}, timeout=1200)
    if r.status_code == 503 and "LeaseLost" in r.text:
        return {"merged": 0, "lease_lost": True}
    if r.status_code == 503 and "LeaseHeld" in r.text:  # waited WAIT_S (600 s) for another replica's run: not run
        return {"merged": 0, "lease_held": True}
    r.raise_for_status()
    return r.json()


def overlapping_runs(c: Cluster, pairs: int, prefix: str = "dup") -> dict[str, Any]:
    """`pairs` users with one duplicate pair each (added through different replicas); every replica asked
    to consolidate at once (the third also for one user) while two clients add, update and delete."""
    n = len(c.replicas)
    with ThreadPoolExecutor(8) as pool:
        made = dict(zip([f"{prefix}{i}" for i in range(pairs)],
                        pool.map(lambda i: c.add_pair(f"{prefix}{i}", c.replicas[i % n], c.replicas[(i + 1) % n]), range(pairs))))
        stop = threading.Event()

        def load(k: int) -> None:  # writes, updates and deletes for other users while the replicas consolidate
            i, user = 0, f"{prefix}load{k}"
            while not stop.is_set() and i < LOAD_OPS:  # bounded: on a slow server the runs must not chase a growing store
                new = c.add(c.replicas[(k + i) % n], f"load note {k}-{i} about topic {i * 7919 % 1000}", user, T0 + i)
                if i % 3 == 1:
                    c.update(c.replicas[(k + i + 1) % n], new, f"load note {k}-{i} revised: topic {i * 104729 % 1000}", user)
                if i % 4 == 3:
                    c.delete(c.replicas[(k + i + 2) % n], new, user)
                i += 1

        loaders = [pool.submit(load, k) for k in range(2)]
        started = time.monotonic()
        try:
            runs = [pool.submit(consolidate, r) for r in c.replicas] + [pool.submit(consolidate, c.replicas[-1], f"{prefix}0")]
            stats = [run.result() for run in runs]
            took = time.monotonic() - started
        finally:
            stop.set()
        for f in loaders:
            f.result()
    return {"pairs": made, "merged_reported": sum(s["merged"] for s in stats), "consolidate_s": round(took, 1),
            "lease_lost": sum(1 for s in stats if s.get("lease_lost") or s.get("lease_held")),
            "runs": [{k: v for k, v in s.items() if not isinstance(v, (dict, list))} for s in stats]}


def killed_mid_run(c: Cluster, pairs: int, prefix: str = "kill") -> dict[str, Any]:
    """`pairs` new duplicate pairs; the first replica asked to consolidate and SIGKILLed once its first
    merge has landed; writes through the others meanwhile; it is restarted and two replicas asked again."""
    assert c.store is not None
    victim, n = c.replicas[0], len(c.replicas)
    with ThreadPoolExecutor(6) as pool:
        made = dict(zip([f"{prefix}{i}" for i in range(pairs)],
                        pool.map(lambda i: c.add_pair(f"{prefix}{i}", c.replicas[i % n], c.replicas[(i + 2) % n]), range(pairs))))
        doomed = pool.submit(consolidate, victim)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not doomed.done():  # kill it once its first merge has landed
            scope = F.in_("user_id", list(made))
            landed = F.or_(F.json_eq("metadata", "merge_pending", True), F.json_eq("metadata", "merge_pending", False))
            if c.store.query(F.and_(scope, landed), ["id"], limit=1):  # (no JSON `exists` on Milvus 2.3)
                break
            time.sleep(0.02)
        killed_mid = not doomed.done()
        victim.kill()
        try:
            doomed.result()
        except httpx.HTTPError:
            pass
        acked_during = [pool.submit(c.add, c.replicas[1 + i % (n - 1)], f"after the crash {i}", f"{prefix}survivor", T0 + i)
                        for i in range(10)]
        holders = httpx.get(c.replicas[1].url + "/v1/stats", timeout=60).json()["service"]["leases"]
        restarted = c.replicas[0] = c.start(0).wait_healthy()
        started = time.monotonic()  # both wait for the dead replica's lease to lapse; one finishes its half-done run
        finish = [f.result() for f in [pool.submit(consolidate, restarted), pool.submit(consolidate, c.replicas[1])]]
        took = time.monotonic() - started
        for f in acked_during:
            f.result()
    return {"pairs": made, "killed_mid_run": killed_mid, "merged_after": [f["merged"] for f in finish],
            "worker_leases_seen": len([h for h in holders if h["group"] == "workers"]), "recover_s": round(took, 1)}


def double_merges(c: Cluster, pairs: dict[str, tuple[int, int]]) -> list[str]:
    """Users whose pair did not end as exactly one merged record of exactly its two sources, with one
    MERGED creation in history (empty when every pair merged once)."""
    assert c.store is not None
    bad = []
    for user, (a, b) in pairs.items():
        rows = c.store.query(F.and_(F.eq("user_id", user), F.eq("memory_type", "episodic")), ["id", "text", "metadata"])
        made = [r for r in rows if (r["metadata"] or {}).get("merged_from_ids")]
        created = [e for e in c.store.history(F.and_(F.eq("user_id", user), F.eq("action", HistoryAction.MERGED.value)))
                   if "merged_from_ids" in (e.get("details") or {})]
        if ([sorted(r["metadata"]["merged_from_ids"]) for r in made] != [sorted((a, b))] or {a, b} & {int(r["id"]) for r in rows}
                or any((r["metadata"] or {}).get("merge_pending") for r in rows) or len(created) != 1):
            bad.append(f"{user}: {len(made)} merged records, {len(created)} MERGED creations")
    return bad


def store_figures(c: Cluster) -> dict[str, Any]:
    """Repeated ids; acknowledged writes lost (not in the store, not deleted on request, not merged into
    another record); acknowledged updates lost; the whole collection's history replayed."""
    assert c.store is not None
    rows = {int(r["id"]): r["text"] for page in c.store.iterate("", ["id", "text"]) for r in page}
    ids = [int(r["id"]) for page in c.store.iterate("", ["id"]) for r in page]
    missing = sorted(set(c.acked) - set(rows) - c.deleted)
    replaced = {int(e["memory_id"]) for e in c.store.history(F.and_(F.in_("memory_id", missing), F.eq("action", HistoryAction.MERGED.value)))
                if (e.get("details") or {}).get("merged_into")} if missing else set()
    report = check_history(c.store)
    return {"rows": len(ids), "acked": len(c.acked), "dup_ids": len(ids) - len(set(ids)),
            "lost": sorted(set(missing) - replaced), "updates_lost": _updates_lost(c, rows), "history": report}


def _updates_lost(c: Cluster, rows: dict[int, str]) -> list[str]:
    """Acknowledged updates whose text is neither the memory's text now nor followed by a recorded change
    (a consolidation's separation may rewrite a text later: its event says so, and the history replay
    checks that the events end in the text stored)."""
    assert c.store is not None
    changed = [i for i, t in c.updated.items() if i in rows and rows[i] != t]
    events = c.store.history(F.in_("memory_id", changed)) if changed else []
    out = []
    for i in changed:
        mine = [e for e in events if int(e["memory_id"]) == i]
        at = next((n for n, e in enumerate(mine) if e["action"] == HistoryAction.UPDATED.value and e.get("new_text") == c.updated[i]), None)
        later = [e["action"] for e in mine[at + 1:]] if at is not None else []
        if at is None or not any(e.get("new_text") not in (None, c.updated[i]) for e in mine[at + 1:]):
            out.append(f"{i}: {rows[i]!r}, acknowledged {c.updated[i]!r}; events after it {later}")
    return out
