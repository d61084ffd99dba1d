"""Ids unique across processes by construction (store/ids.py) and leases in the store
(store/leases.py), on a real `milvus-lite server` shared by several processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hippocampus.store import MilvusStore
from hippocampus.store.ids import FLAG, FixedWorker, IdAllocator, compose, worker_of
from hippocampus.store.leases import ALL, JOBS, Lease, LeaseLost, LeaseTable
from hippocampus.store.leases_local import LocalLeases
from hippocampus.testing import DeterministicEmbedder
from tests.scale.support import ROOT, client_id_collection

PROCESSES, BATCHES, BATCH = 3, 2, 300
DIM = 32  # small vectors: the writes, not the vectors, are under test


@pytest.fixture(scope="module")
def server(scale_server: str) -> str:
    return scale_server  # tests/scale/conftest.py


def _store(uri: str, collection: str) -> MilvusStore:
    emb = DeterministicEmbedder()
    return MilvusStore(uri, emb.dim, emb.model_name, collection=collection)


# ------------------------------------------------------------------ ids, no server
def test_new_ids_keep_clear_of_old_ones_and_carry_their_worker():
    old_max = ((1 << 41) - 1) << 22 | ((1 << 22) - 1)  # the old layout's largest id (2093): bit 62 is its top ms bit
    first = compose(0, 0, 0)
    assert first == FLAG and worker_of(first) == 0
    assert worker_of(1_500_000_000_000_000_000 & ~FLAG) is None  # an id of the old layout
    ids = IdAllocator(FixedWorker(777)).take(20_000)  # > 4,096 per ms: the sequence waits for the next millisecond
    assert len(set(ids)) == len(ids) and ids == sorted(ids)
    assert all(FLAG <= i < 2**63 and worker_of(i) == 777 for i in ids)
    # every old id written before 2058 has bit 62 clear, so it is below every new one
    old_2057 = (((2057 - 2024) * 365 * 86_400_000) << 22) | ((1 << 22) - 1)
    assert old_2057 < FLAG <= min(ids) and old_max < 2**63


# ------------------------------------------------------------------ ids, several processes
_WRITER = r"""
import json, sys, time
from pathlib import Path
from hippocampus import Memory
from hippocampus.store.ids import worker_of
from hippocampus.testing import DeterministicEmbedder

uri, collection, me, sync, peers, batches, size = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
t0 = time.time()
with Memory(milvus_uri=uri, collection_name=collection, embedder=DeterministicEmbedder(32)) as m:
    m.store._ids.worker.number()  # claim the worker number before the common start
    items = [[{"text": f"{me} note {b}-{i}", "user_id": f"u{i % 7}"} for i in range(size)] for b in range(batches)]
    (sync / me).write_text(str(time.time()))
    deadline = time.monotonic() + 120
    while len(list(sync.iterdir())) < peers and time.monotonic() < deadline:
        time.sleep(0.01)
    start_at = max(float(p.read_text() or 0) for p in sync.iterdir()) + 0.5  # the same moment for every process
    while time.time() < start_at:
        time.sleep(0.001)
    ids = []
    for batch in items:
        ids += m.add_many(batch)
    print(json.dumps({"ids": ids, "workers": sorted({worker_of(i) for i in ids}), "open_s": start_at - t0, "write_s": time.time() - start_at}))
"""


def test_processes_writing_in_the_same_milliseconds_never_share_an_id(server: str, tmp_path: Path):
    emb = DeterministicEmbedder(DIM)
    collection = client_id_collection(server, "ids", emb.dim, emb.model_name)
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, server, collection, f"p{n}", str(tmp_path), str(PROCESSES),
                               str(BATCHES), str(BATCH)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(PROCESSES)]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    ids = [i for o in out for i in o["ids"]]
    workers = [o["workers"] for o in out]
    assert all(len(w) == 1 for w in workers) and len({w[0] for w in workers}) == PROCESSES  # one number each, all different
    assert len(ids) == PROCESSES * BATCHES * BATCH and len(set(ids)) == len(ids)  # no duplicate id
    print("\n" + "; ".join(f"opened in {o['open_s']:.1f} s, wrote in {o['write_s']:.1f} s" for o in out))
    store = MilvusStore(server, emb.dim, emb.model_name, collection=collection)
    try:
        assert store.count() == len(ids)  # no row lost (a repeated primary key would have overwritten or doubled one)
        found = {int(r["id"]) for page in store.iterate("", ["id"]) for r in page}
        assert found == set(ids)
    finally:
        store.close()


# ------------------------------------------------------------------ leases
def test_claims_exclude_each_other_and_every_user_excludes_each_user(server: str):
    collection = client_id_collection(server, "lease")
    a, b = _store(server, collection), _store(server, collection)
    try:
        ta, tb = a.leases, b.leases
        assert isinstance(ta, LeaseTable) and ta.owner != tb.owner
        alice = ta.try_acquire(JOBS, "alice", "consolidate")
        assert isinstance(alice, Lease) and alice.token >= 1
        assert tb.try_acquire(JOBS, "alice", "decay") == f"{ta.owner} (consolidate)"
        assert isinstance(tb.try_acquire(JOBS, ALL, "decay"), str)  # every user includes alice
        bob = tb.try_acquire(JOBS, "bob", "consolidate")
        assert isinstance(bob, Lease)
        alice.check()
        assert [(h["name"], h["owner"]) for h in sorted(ta.holders(JOBS), key=lambda h: h["name"])] == [
            ("alice", ta.owner), ("bob", tb.owner)]
        ta.release(alice)
        tb.release(bob)
        every = tb.try_acquire(JOBS, ALL, "decay")
        assert isinstance(every, Lease)
        assert isinstance(ta.try_acquire(JOBS, "carol", "consolidate"), str)
        tb.release(every)
        again = ta.try_acquire(JOBS, "alice", "consolidate")
        assert isinstance(again, Lease) and again.token > alice.token  # the fencing token only grows
        ta.release(again)
    finally:
        a.close()
        b.close()


def test_racing_claimants_never_both_win_and_a_dead_holder_expires(server: str):
    collection = client_id_collection(server, "race")
    stores = [_store(server, collection) for _ in range(4)]
    try:
        tables = [s.leases for s in stores]
        for round_ in range(4):
            won: list[Lease] = []
            gate = threading.Barrier(len(tables))

            def claim(t: LeaseTable) -> None:
                gate.wait()
                got = t.try_acquire(JOBS, f"user{round_}", "consolidate")
                if isinstance(got, Lease):
                    won.append(got)

            threads = [threading.Thread(target=claim, args=(t,)) for t in tables]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            assert len(won) <= 1, round_
            for lease in won:
                lease.table.release(lease)
        # a holder that stops renewing (a killed replica) loses its lease after ttl + skew; its check then fails
        dead = LeaseTable(stores[0], owner="dead", ttl_s=1.0, skew_s=0.2)
        lease = dead.try_acquire(JOBS, "zed", "consolidate")
        assert isinstance(lease, Lease)
        dead._stop.set()  # no more renewals, as after SIGKILL
        assert isinstance(tables[1].try_acquire(JOBS, "zed", "consolidate"), str)
        deadline = time.monotonic() + 10
        got: Lease | str = ""
        while not isinstance(got, Lease) and time.monotonic() < deadline:
            time.sleep(0.2)
            got = tables[1].try_acquire(JOBS, "zed", "consolidate")
        assert isinstance(got, Lease) and got.token > lease.token
        with pytest.raises(LeaseLost):
            lease.check()
        got.check()
        tables[1].release(got)
    finally:
        for s in stores:
            s.close()


def test_local_leases_are_reentrant_for_their_thread_and_exclusive_for_others():
    t = LocalLeases()
    outer = t.acquire(JOBS, ALL, "consolidate")
    assert t.acquire(JOBS, "alice", "decay") is outer  # every user covers alice, in the same thread
    seen: list[object] = []
    th = threading.Thread(target=lambda: seen.append(t.try_acquire(JOBS, "alice", "decay")))
    th.start()
    th.join()
    assert seen == [f"{t.owner} (consolidate)"]
    t.release(outer)
    t.release(outer)
    assert isinstance(t.try_acquire(JOBS, "alice", "decay"), Lease)
