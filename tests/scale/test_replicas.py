"""Three `hippocampus serve` replicas on one `milvus-lite server` (issue 34): clients spread over
them, concurrent adds and consolidations for overlapping users, one replica SIGKILLed mid-
consolidation and restarted. Nothing acknowledged is lost, no id repeats, no pair merges twice:
the store's leases (store/leases.py), the fencing checks and the merge key (consolidation/) hold it.

The collection is made with ids assigned by hippocampus (as on a Milvus server), so the id worker
leases are exercised too; leases last 5 s here so that a killed replica's lapses within the test.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from hippocampus.embeddings.offline import MODEL_NAME, OfflineEmbedder
from hippocampus.models import HistoryAction
from hippocampus.store import MilvusStore
from hippocampus.store import filters as F
from tests.scale.support import Replica, client_id_collection
from tests.service_support import free_port

REPLICAS = 3
PAIRS = 24
KILL_PAIRS = 8
LEASE_ENV = {"HIPPOCAMPUS_LEASE_TTL_S": "5"}
T0 = int(time.time()) - 7200


class Cluster:
    def __init__(self, uri: str, collection: str, base: Path):
        self.uri, self.collection, self.base = uri, collection, base
        self.replicas: list[Replica] = []
        self.store = MilvusStore(uri, OfflineEmbedder().dim, MODEL_NAME, collection=collection)
        self.acked: list[int] = []  # ids every replica acknowledged
        self._lock = threading.Lock()

    def start(self, n: int) -> Replica:
        replica = Replica(self.uri, self.collection, free_port(), self.base / f"replica{n}.log", env=LEASE_ENV)
        return replica

    def add(self, replica: Replica, text: str, user: str, ts: int) -> int:
        r = httpx.post(replica.url + "/v1/memories", json={"messages": text, "user_id": user, "chat_id": "c1", "ts": ts}, timeout=120)
        r.raise_for_status()
        ids = r.json()["ids"]
        with self._lock:
            self.acked += ids
        return ids[0]

    def add_pair(self, user: str, first: Replica, second: Replica) -> tuple[int, int]:
        a = self.add(first, f"{user} went to the dentist this afternoon and got a filling", user, T0)
        b = self.add(second, f"{user} went to the dentist this afternoon and got a filling. It cost $120.", user, T0 + 600)
        return a, b


def consolidate(replica: Replica, user: str | None = None) -> dict[str, Any]:
    r = httpx.post(replica.url + "/v1/consolidate", json={"user_id": user} if user else {}, timeout=300)
    r.raise_for_status()
    return r.json()


@pytest.fixture(scope="module")
def cluster(scale_server: str, tmp_path_factory) -> Iterator[Cluster]:
    uri, base = scale_server, tmp_path_factory.mktemp("replicas")  # the server: tests/scale/conftest.py
    c = Cluster(uri, client_id_collection(uri, "replicas", OfflineEmbedder().dim, MODEL_NAME), base)
    try:
        c.replicas = [c.start(n) for n in range(REPLICAS)]  # started together: they race to make the lease collection
        for r in c.replicas:
            r.wait_healthy()
        assert all("running as one of several replicas" in r.log.read_text() for r in c.replicas)
        yield c
    finally:
        for r in c.replicas:
            r.stop()
        c.store.close()


def _check_users(c: Cluster, pairs: dict[str, tuple[int, int]]) -> int:
    """Each user: exactly one merged record, of exactly its two sources, which are gone; nothing left
    pending; one MERGED creation in history. Returns the merged records seen."""
    merged = 0
    for user, (a, b) in pairs.items():
        rows = c.store.query(F.and_(F.eq("user_id", user), F.eq("memory_type", "episodic")), ["id", "text", "metadata"])
        made = [r for r in rows if (r["metadata"] or {}).get("merged_from_ids")]
        assert [sorted(r["metadata"]["merged_from_ids"]) for r in made] == [sorted((a, b))], (user, rows)
        assert not any((r["metadata"] or {}).get("merge_pending") for r in rows), user
        assert not {a, b} & {int(r["id"]) for r in rows}, user
        created = [e for e in c.store.history(F.and_(F.eq("user_id", user), F.eq("action", HistoryAction.MERGED.value)))
                   if "merged_from_ids" in (e.get("details") or {})]
        assert len(created) == 1, (user, created)
        merged += len(made)
    return merged


def _check_store(c: Cluster) -> None:
    """0 duplicate ids; 0 acknowledged writes lost: each is in the store, or a merge replaced it (its
    MERGED event says into which record)."""
    ids = [int(r["id"]) for page in c.store.iterate("", ["id"]) for r in page]
    assert len(ids) == len(set(ids)) == c.store.count()
    missing = sorted(set(c.acked) - set(ids))
    replaced = {int(e["memory_id"]) for e in c.store.history(F.and_(F.in_("memory_id", missing), F.eq("action", HistoryAction.MERGED.value)))
                if (e.get("details") or {}).get("merged_into")} if missing else set()
    assert not set(missing) - replaced, sorted(set(missing) - replaced)


def test_three_replicas_asked_at_once_merge_each_pair_exactly_once(cluster: Cluster):
    c, (r0, r1, r2) = cluster, cluster.replicas
    with ThreadPoolExecutor(8) as pool:
        pairs = dict(zip([f"dup{i}" for i in range(PAIRS)],
                         pool.map(lambda i: c.add_pair(f"dup{i}", c.replicas[i % 3], c.replicas[(i + 1) % 3]), range(PAIRS))))
        stop = threading.Event()

        def load(n: int) -> None:  # writes for other users while the three consolidate
            i = 0
            while not stop.is_set():
                c.add(c.replicas[(n + i) % 3], f"load note {n}-{i} about topic {i * 7919 % 1000}", f"load{n}", T0 + i)
                i += 1

        loaders = [pool.submit(load, n) for n in range(2)]
        runs = [pool.submit(consolidate, r0), pool.submit(consolidate, r1), pool.submit(consolidate, r2, "dup0"),
                pool.submit(consolidate, r2)]
        stats = [run.result() for run in runs]
        stop.set()
        for f in loaders:
            f.result()
    assert sum(s["merged"] for s in stats) == PAIRS  # never 28 or 29 for 24 pairs
    assert _check_users(c, pairs) == PAIRS
    _check_store(c)
    workers = {i >> 12 & 1023 for i in c.acked}
    assert len(workers) == REPLICAS  # one id worker number per replica, claimed from the store


def test_a_replica_killed_mid_consolidation_loses_nothing_and_merges_once(cluster: Cluster):
    c = cluster
    victim = c.replicas[0]
    with ThreadPoolExecutor(6) as pool:
        pairs = dict(zip([f"kill{i}" for i in range(KILL_PAIRS)],
                         pool.map(lambda i: c.add_pair(f"kill{i}", c.replicas[i % 3], c.replicas[(i + 2) % 3]), range(KILL_PAIRS))))
        doomed = pool.submit(consolidate, victim)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not doomed.done():  # kill it once its first merge has landed
            done = c.store.query(F.and_(F.in_("user_id", list(pairs)), F.json_eq("metadata", "merge_pending", False)), ["id"], limit=1)
            pending = c.store.query(F.and_(F.in_("user_id", list(pairs)), F.json_eq("metadata", "merge_pending", True)), ["id"], limit=1)
            if done or pending:
                break
            time.sleep(0.02)
        killed_mid = not doomed.done()
        victim.kill()
        with pytest.raises(httpx.HTTPError):
            doomed.result()
        acked_during = [pool.submit(c.add, c.replicas[1 + i % 2], f"after the crash {i}", "survivor", T0 + i) for i in range(10)]
        holders = httpx.get(c.replicas[1].url + "/v1/stats", timeout=30).json()["service"]["leases"]
        restarted = c.replicas[0] = c.start(0).wait_healthy()
        # both wait for the dead replica's lease to lapse; one finishes its half-done run, the other finds nothing
        finish = [f.result() for f in [pool.submit(consolidate, restarted), pool.submit(consolidate, c.replicas[1])]]
        for f in acked_during:
            f.result()
    assert _check_users(c, pairs) == KILL_PAIRS  # one merged record each, of its two sources: none merged twice
    _check_store(c)
    assert len([h for h in holders if h["group"] == "workers"]) >= 2  # `stats` names the replicas' leases
    print(f"\nkilled mid-run: {killed_mid}; afterwards merged {[f['merged'] for f in finish]} of {KILL_PAIRS}")
