"""Three `hippocampus serve` replicas on one `milvus-lite server` (issue 34), the harness of
harness.py: clients spread over them, concurrent adds, updates, deletes and consolidations for
overlapping users, one replica SIGKILLed mid-consolidation and restarted. Nothing acknowledged is
lost, no id repeats, no pair merges twice, and every memory's history replays to its final state
(history_check.py): the store's leases (store/leases.py), the fencing checks and the merge key
(consolidation/) hold it.

The collection is made with ids assigned by hippocampus (as on a Milvus server), so the id worker
leases are exercised too; leases last 5 s here so that a killed replica's lapses within the test.
Replicas started together on a collection nobody made yet race to make it (store/connection.py's
ensure_collection): the last test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hippocampus.embeddings.offline import MODEL_NAME, OfflineEmbedder
from hippocampus.store.ids import worker_of
from tests.scale.harness import Cluster, double_merges, killed_mid_run, overlapping_runs, store_figures
from tests.scale.support import client_id_collection
from tests.service_support import free_port

REPLICAS = 3
PAIRS = 24
KILL_PAIRS = 8


@pytest.fixture(scope="module")
def cluster(scale_server: str, tmp_path_factory) -> Iterator[Cluster]:
    uri, base = scale_server, tmp_path_factory.mktemp("replicas")  # the server: tests/scale/conftest.py
    c = Cluster(uri, client_id_collection(uri, "replicas", OfflineEmbedder().dim, MODEL_NAME), base, free_port)
    try:
        c.start_all(REPLICAS)  # started together: they race to make the lease collection
        assert all("running as one of several replicas" in r.log.read_text() for r in c.replicas)
        yield c
    finally:
        c.stop()


def _assert_clean(c: Cluster) -> None:
    figures = store_figures(c)
    print("\n" + figures["history"].summary())
    assert figures["dup_ids"] == 0 and figures["rows"] == c.store.count()  # type: ignore[union-attr]
    assert figures["lost"] == [] and figures["updates_lost"] == []
    assert figures["history"], figures["history"].summary()


def test_three_replicas_asked_at_once_merge_each_pair_exactly_once(cluster: Cluster):
    c = cluster
    run = overlapping_runs(c, PAIRS)
    assert run["merged_reported"] == PAIRS, run["runs"]  # never 28 or 29 for 24 pairs; each run's stats said when not
    assert double_merges(c, run["pairs"]) == []
    _assert_clean(c)
    workers = {worker_of(i) for i in c.acked}
    # a worker number per replica, claimed from the store (a replica whose 5 s lease lapsed on a loaded
    # machine claims another: more numbers, never a shared one, as the 0 repeated ids show)
    assert None not in workers and len(workers) >= REPLICAS, workers


def test_a_replica_killed_mid_consolidation_loses_nothing_and_merges_once(cluster: Cluster):
    c = cluster
    run = killed_mid_run(c, KILL_PAIRS)
    assert double_merges(c, run["pairs"]) == []  # one merged record each, of its two sources: none merged twice
    _assert_clean(c)
    assert run["worker_leases_seen"] >= 2  # `stats` names the replicas' leases
    print(f"killed mid-run: {run['killed_mid_run']}; afterwards merged {run['merged_after']} of {KILL_PAIRS}")


def test_replicas_started_together_on_a_fresh_collection_all_serve(scale_server: str, tmp_path_factory):
    """The "index not found" / "already exists" race: three replicas make the memories, history and
    lease collections at the same moment; each comes up, takes writes and finds the others'."""
    import httpx

    c = Cluster(scale_server, f"fresh_{uuid.uuid4().hex[:8]}", tmp_path_factory.mktemp("fresh"), free_port)  # nothing made yet
    try:
        c.start_all(REPLICAS)
        ids = [c.add(r, f"replica {n} was started with the others", "fresh", 1_790_000_000 + n) for n, r in enumerate(c.replicas)]
        for r in c.replicas:
            got = httpx.get(r.url + "/v1/memories", params={"user_id": "fresh"}, timeout=60).json()
            assert sorted(m["id"] for m in got["items"]) == sorted(ids)
        _assert_clean(c)
    finally:
        c.stop()
