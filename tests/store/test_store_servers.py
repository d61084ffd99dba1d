"""One store shared through a Milvus URI, on real servers bound to 127.0.0.1: milvus-lite's server mode
(`milvus-lite server`), and Milvus 2.3 standalone from the PyPI package `milvus`, which has no
full-text search, so the store degrades (store/capabilities.py).

Every server runs in its own process group, is stopped in a `finally` (SIGINT, then SIGKILL for the
group), and every wait is bounded. See docs/store-servers.md for the commands and start-up times.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

import pytest

from hippocampus import Memory, NotFound
from hippocampus.store.buckets import bucket_of
from hippocampus.store.capabilities import from_version
from hippocampus.store.ids import IdAllocator
from hippocampus.testing import DeterministicEmbedder
from tests.core_support import FailingEmbedder

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
START_TIMEOUT = 120.0  # Milvus 2.3 took ~9 s here (it unpacks ~250 MB first); milvus-lite ~1.5 s
WORKER_TIMEOUT = 120.0


# ------------------------------------------------------------------ no server needed
def test_capabilities_follow_the_server_version():
    lite = from_version("milvus_lite-3.2.2")
    assert (lite.engine, lite.version, lite.full_text, lite.client_ids, lite.consistency) == ("milvus-lite", "3.2.2", True, False, None)
    old = from_version("v2.3.5-lite")  # the PyPI `milvus` package: a real Milvus 2.3
    assert (old.engine, old.version, old.full_text, old.client_ids, old.consistency) == ("milvus", "2.3.5", False, True, "Strong")
    assert old.search_modes == ("dense",) and [old.serve(m) for m in ("hybrid", "dense", "bm25")] == ["dense"] * 3
    assert from_version("v2.4.17").full_text is False
    assert from_version("v2.5.4").full_text and from_version("v2.5.4").serve("bm25") == "bm25"
    assert from_version("Zilliz Cloud Vector Database(Compatible with Milvus 2.5)").full_text
    assert from_version("").version == "unknown" and from_version("").full_text  # assume current, fail loudly later


def test_client_ids_are_unique_increasing_int64():
    alloc = IdAllocator()
    ids = alloc.take(20_000) + alloc.take(1)
    assert len(set(ids)) == len(ids) and ids == sorted(ids)
    assert all(0 < i < 2**63 for i in ids)


# ------------------------------------------------------------------ server processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no log)"


@contextmanager
def _server(cmd: list[str], log: Path, ready: Callable[[], bool], what: str, env: dict[str, str] | None = None) -> Iterator[float]:
    """Run a server in its own process group until the block ends; yields its start-up time in seconds."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    try:
        started = time.monotonic()
        while not ready():
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}:\n{_tail(log)}")
            if time.monotonic() - started > START_TIMEOUT:
                raise TimeoutError(f"{what} not ready after {START_TIMEOUT:.0f} s:\n{_tail(log)}")
            time.sleep(0.1)
        took = time.monotonic() - started
        print(f"\n{what} ready in {took:.1f} s")
        yield took
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT lets both servers shut down cleanly (the `milvus` wrapper stops its binary); whatever is
    left of the process group after the grace period is killed."""
    try:
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=10)


def _collection(uri: str) -> str:
    """A collection made once per server and shared by its tests (other users in each): making one
    (memories and history, indexed and loaded) takes ~6 s on Milvus 2.3, 1.5-2 s on milvus-lite's server."""
    name = f"shared_{uuid.uuid4().hex[:8]}"
    Memory(milvus_uri=uri, collection_name=name, embedder=DeterministicEmbedder()).close()
    return name


def _port_open(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=0.5).close()
        return True
    except OSError:
        return False


_LITE_MAIN = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); from milvus_lite.cmdline import main; main()"


@pytest.fixture(scope="module")
def lite_server(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """`milvus-lite server` on a free loopback port; yields its URI and a collection on it."""
    base = tmp_path_factory.mktemp("lite-server")
    port = _free_port()
    # = `milvus-lite server ...`, with SIGINT handled even where a non-interactive shell left it ignored
    cmd = [sys.executable, "-c", _LITE_MAIN, "server", "--data-dir", str(base / "data"), "--host", HOST, "--port", str(port)]
    with _server(cmd, base / "server.log", lambda: _port_open(port), "milvus-lite server"):
        uri = f"http://{HOST}:{port}"
        yield uri, _collection(uri)


_ETCD = """listen-client-urls: http://127.0.0.1:{client}
advertise-client-urls: http://127.0.0.1:{client}
listen-peer-urls: http://127.0.0.1:{peer}
initial-advertise-peer-urls: http://127.0.0.1:{peer}
initial-cluster: default=http://127.0.0.1:{peer}
"""
# Each component registers this address for the others to call (default: the first non-loopback one).
_LOOPBACK = [f"{c}.ip=127.0.0.1" for c in ("rootCoord", "proxy", "queryCoord", "queryNode", "indexNode", "dataCoord", "dataNode")]


@pytest.fixture(scope="module")
def milvus23_server(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """Milvus 2.3 standalone from the PyPI package `milvus`, on loopback; yields its URI and a collection on it.

    Its embedded etcd ignores the wrapper's --etcd-port and takes 2379/2380 unless given a config
    file (ETCD_CONFIG_PATH), so two such servers on one machine would collide without it. The
    proxy's time tick is 20 ms instead of 200: a Strong read waits for the next tick (0.3 s each
    with the default, ~30 ms with this), which keeps the test short."""
    if find_spec("milvus") is None:
        pytest.skip("the PyPI package `milvus` (Milvus 2.3 standalone, Linux x86_64 wheels only) is not installed")
    base = tmp_path_factory.mktemp("milvus23")
    port, etcd, peer = _free_port(), _free_port(), _free_port()
    (base / "etcd.yaml").write_text(_ETCD.format(client=etcd, peer=peer))
    log = base / "server.log"
    cmd = [sys.executable, "-c", "import milvus; milvus.main()", "--data", str(base / "data"),
           "--proxy-port", str(port), "--etcd-port", str(etcd), "--extra-config", "proxy.timeTickInterval=20"]
    for item in _LOOPBACK:
        cmd += ["--extra-config", item]
    try:
        with _server(cmd, log, lambda: "Welcome to use Milvus" in _tail(log, 100_000), "Milvus 2.3 standalone",
                     env={"ETCD_CONFIG_PATH": str(base / "etcd.yaml")}):
            uri = f"http://{HOST}:{port}"
            yield uri, _collection(uri)
    finally:
        shutil.rmtree(base / "data" / "bin", ignore_errors=True)  # the unpacked server binaries: ~250 MB


# ------------------------------------------------------------------ what must hold on every server
def _core_properties(m: Memory) -> None:
    """Tenant isolation, add/get/update/delete and history, as on milvus-lite (tests/store/test_core_store.py)."""
    a = m.add("Alice's locker code is 4711", user_id="alice", chat_id="c1").ids[0]
    b = m.add("Bob's locker code is 1234", user_id="bob", chat_id="c1").ids[0]
    assert m.get(a, user_id="alice").text == "Alice's locker code is 4711"
    for call in (lambda: m.get(b, user_id="alice"), lambda: m.history(b, user_id="alice"),
                 lambda: m.update(b, "taken over", user_id="alice"), lambda: m.delete(b, user_id="alice")):
        with pytest.raises(NotFound):
            call()
    assert [r.id for r in m.get_all("alice")] == [a]
    for mode in ("dense", "hybrid", "bm25"):
        found = m.search("locker code 1234", user_id="alice", mode=mode, limit=10)
        assert [h.id for h in found.episodic + found.semantic] == [a], mode
    assert m.get(b, user_id="bob").text == "Bob's locker code is 1234"  # untouched by alice's attempts

    assert m.update(a, "Alice's locker code is 0815", user_id="alice").id == a  # the id stays
    assert m.get(a, user_id="alice").text == "Alice's locker code is 0815"
    assert m.search("locker code 0815", user_id="alice", mode="dense").episodic[0].id == a
    m.delete(a, user_id="alice")
    with pytest.raises(NotFound):
        m.get(a, user_id="alice")
    assert m.get_all("alice") == []
    events = m.history(a, user_id="alice")
    assert [e.action.value for e in events] == ["created", "updated", "deleted"]
    assert [e.new_text for e in events[:2]] == ["Alice's locker code is 4711", "Alice's locker code is 0815"]
    assert [e.action.value for e in m.history(b, user_id="bob")] == ["created"]


_WORKER = r"""
import json, sys, time
from pathlib import Path
from hippocampus import Memory
from hippocampus.testing import DeterministicEmbedder

uri, collection, me, other, sync = sys.argv[1:6]
with Memory(milvus_uri=uri, collection_name=collection, embedder=DeterministicEmbedder()) as m:
    Path(sync, me).touch()  # both processes are open before either writes: they work at the same time
    deadline = time.monotonic() + 60
    while not Path(sync, other).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    mine = [m.add(f"{me} wrote note {i}", user_id="team", chat_id=me).ids[0] for i in range(5)]
    theirs = []
    while len(theirs) < 5 and time.monotonic() < deadline:
        theirs = [r.id for r in m.get_all("team") if r.chat_id == other]
        time.sleep(0.05)
    top = m.search(f"{other} wrote note 3", user_id="team", mode="dense", limit=1).episodic
    read = m.get(theirs[0], user_id="team").text if theirs else None
    print(json.dumps({"mine": mine, "theirs": theirs, "top_chat": top[0].memory.chat_id if top else None, "read": read}))
"""


def _two_processes_share(uri: str, collection: str, tmp_path: Path) -> None:
    with Memory(milvus_uri=uri, collection_name=collection, embedder=DeterministicEmbedder()) as m:
        procs = {
            me: subprocess.Popen([sys.executable, "-c", _WORKER, uri, collection, me, other, str(tmp_path)],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
            for me, other in (("p1", "p2"), ("p2", "p1"))
        }
        out = {}
        try:
            for me, proc in procs.items():
                stdout, stderr = proc.communicate(timeout=WORKER_TIMEOUT)
                assert proc.returncode == 0, stderr[-3000:]
                out[me] = json.loads(stdout.strip().splitlines()[-1])
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
        for me, other in (("p1", "p2"), ("p2", "p1")):
            assert sorted(out[me]["theirs"]) == sorted(out[other]["mine"]), me
            assert out[me]["top_chat"] == other and out[me]["read"].startswith(f"{other} wrote note")
        assert sorted(r.id for r in m.get_all("team")) == sorted(out["p1"]["mine"] + out["p2"]["mine"])


# ------------------------------------------------------------------ milvus-lite server mode
def test_two_processes_share_a_milvus_lite_server(lite_server: tuple[str, str], tmp_path: Path):
    _two_processes_share(*lite_server, tmp_path)


def test_core_properties_on_a_milvus_lite_server(lite_server: tuple[str, str]):
    uri, collection = lite_server
    with Memory(milvus_uri=uri, collection_name=collection, embedder=DeterministicEmbedder()) as m:
        caps = m.store.capabilities
        assert (caps.engine, caps.full_text, caps.client_ids) == ("milvus-lite", True, False)
        _core_properties(m)


# ------------------------------------------------------------------ Milvus 2.3: no full-text search
def test_core_properties_on_milvus_23_with_dense_fallback(milvus23_server: tuple[str, str], caplog):
    uri, collection = milvus23_server
    with caplog.at_level(logging.WARNING, logger="hippocampus"):
        m = Memory(milvus_uri=uri, collection_name=collection, embedder=DeterministicEmbedder())
    try:
        caps = m.store.capabilities
        assert (caps.engine, caps.version, caps.full_text, caps.client_ids, caps.search_modes) == (
            "milvus", "2.3.5", False, True, ("dense",))
        said = [r.getMessage() for r in caplog.records if "full-text" in r.getMessage()]
        assert said == [f"Milvus 2.3.5 at {uri} has no full-text search (BM25 needs Milvus 2.5): "
                        "hybrid and bm25 searches run dense-only (this store serves: dense)"]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="hippocampus"):
            _core_properties(m)  # searches in hybrid and bm25 mode too: served dense, no further warning
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        m.close()
    blind = Memory(milvus_uri=uri, collection_name=collection, embedder=FailingEmbedder(DeterministicEmbedder()))
    try:  # no embedder and no BM25: the newest memories, said once per search
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="hippocampus.retrieval"):
            hits = blind.search("locker", user_id="bob").episodic
        assert [h.memory.text for h in hits] == ["Bob's locker code is 1234"]
        assert [r.getMessage().split("; ")[1] for r in caplog.records] == ["falling back to the newest memories (no full-text search)"]
    finally:
        blind.close()


def test_two_processes_share_a_milvus_23_server(milvus23_server: tuple[str, str], tmp_path: Path):
    _two_processes_share(*milvus23_server, tmp_path)


_OPENER = r"""
import sys, time
from pathlib import Path
from hippocampus import Memory
from hippocampus.testing import DeterministicEmbedder

uri, collection, me, sync = sys.argv[1:5]
Path(sync, me).touch()  # imported: wait for the others, then all open at once
deadline = time.monotonic() + 60
while len(list(Path(sync).iterdir())) < 3 and time.monotonic() < deadline:
    time.sleep(0.01)
with Memory(milvus_uri=uri, collection_name=collection, embedder=DeterministicEmbedder()) as m:
    m.store.leases.ensure()
    print(m.add(f"{me} opened it", user_id="fresh", chat_id=me).ids[0])
"""


def test_three_processes_make_one_fresh_collection_on_milvus_23(milvus23_server: tuple[str, str], tmp_path: Path):
    """The "index not found" race (store/connection.ensure_collection, issue 34): three processes open a
    collection nobody made yet at the same moment; each makes or finds it (memories, history, leases),
    indexed and loaded, and writes to it."""
    uri, name = milvus23_server[0], f"fresh_{uuid.uuid4().hex[:8]}"
    procs = [subprocess.Popen([sys.executable, "-c", _OPENER, uri, name, f"p{n}", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True) for n in range(3)]
    ids = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=WORKER_TIMEOUT)
            assert proc.returncode == 0, stderr[-3000:]
            ids.append(int(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    with Memory(milvus_uri=uri, collection_name=name, embedder=DeterministicEmbedder()) as m:
        assert sorted(r.id for r in m.get_all("fresh")) == sorted(ids) and len(set(ids)) == 3


# ------------------------------------------------------------------ the filter property (docs/filters.md) on Milvus 2.3
@pytest.fixture(scope="module")
def filter_store_23(milvus23_server: tuple[str, str]) -> Iterator[tuple[Memory, list]]:
    from tests.store.filter_ops_support import fill

    m = Memory(milvus_uri=milvus23_server[0], collection_name=milvus23_server[1], embedder=DeterministicEmbedder())
    user = f"filters_{uuid.uuid4().hex[:6]}"
    fill(m, user)
    yield m, [user, m.get_all(user)]
    m.close()


def test_the_filter_property_holds_on_milvus_23(filter_store_23: tuple[Memory, list]):
    """tests/store/test_filter_ops_property.py's property, ~20 examples on the server (no JSON `exists`
    there: what milvus-lite filters in the store is checked after retrieval or in Python)."""
    from hypothesis import given, settings

    from tests.store.filter_ops_support import FILTERS, check

    m, (user, everything) = filter_store_23

    @settings(max_examples=20)
    @given(f=FILTERS)
    def prop(f: dict) -> None:
        check(m, user, f, everything)

    check(m, user, {"OR": [{"s": {"icontains": "hello"}}, {"n": {"gte": 2}}], "NOT": {"who": "ana"}}, everything)
    prop()


# ------------------------------------------------------------------ the cross-language companion on both servers
@pytest.mark.parametrize("server", ["lite_server", "milvus23_server"])
def test_the_cross_language_companion_works_on_each_server(server: str, request, embedder):
    """Milvus 2.3 refuses a second vector field ("multiple vector fields is not supported"), which is why the
    cross vectors live in `<name>_xvec` (store/xvector.py); on a server Milvus searches it (no cache)."""
    from tests.store.test_xvector_companion import ANSWER, OTHERS, QUESTION

    uri, _ = request.getfixturevalue(server)
    name = f"x_{uuid.uuid4().hex[:8]}"
    with Memory(milvus_uri=uri, collection_name=name, embedder=embedder) as m:
        assert m.store.cross.active
        ids = m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
        index = m.store.client.describe_index(m.store.cross.name, m.store.client.list_indexes(m.store.cross.name)[0])
        assert index["index_type"] == ("FLAT" if server == "lite_server" else "AUTOINDEX")  # Capabilities.companion_index
        assert m.store.cross.bucketed and bucket_of("mei") in m.store.client.list_partitions(m.store.cross.name)
        m.add("I'm allergic to penicillin too.", user_id="bob", infer=False)
        top = [h.text for h in m.search(QUESTION, user_id="mei", limit=3).all[:3]]
        assert ANSWER in top and all("too" not in t for t in top)
        m.delete(ids[0], user_id="mei")
        assert m.store.client.query(m.store.cross.name, filter=f"id == {ids[0]}", output_fields=["id"]) == []
    with Memory(milvus_uri=uri, collection_name=name, embedder=embedder) as m:  # reopened: found and searched
        assert m.store.cross.active
        m.add(ANSWER, user_id="mei", infer=False)
        assert ANSWER in [h.text for h in m.search(QUESTION, user_id="mei", limit=3).all[:3]]
