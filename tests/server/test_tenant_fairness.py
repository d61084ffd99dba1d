"""One tenant's 3,000-text batch does not stall another tenant's search (issue 41), proved by order, never
by time: through the service (two keys), tenant A sends add_many of 3,000 texts (the Client sends requests
of wire.MAX_ADD_MANY); while the bundled embedder works on one of A's chunks, tenant B searches. The real
model is wrapped to record every call in order; B's query embedding must come within SERVED_WITHIN of A's
chunks after the chunk in progress, and long before the batch's last chunk (the embedder takes its lock per
chunk of at most LOCK_CHUNK texts, and grants it in turn: embeddings/base.py FairLock). The test holds that
bound, not one exact interleaving. Before the FairLock, one lock per call held B for the whole batch (an
add_many of 150 texts held a search for 49 s; one of 3,000 for over 25 minutes).

Once B's search has been served, A's next chunk fails on purpose (EmbeddingError, 503): the rest of the
batch would only cost minutes of embedding and prove nothing more."""

from __future__ import annotations

import secrets
import threading
import uuid
from typing import Any

import pytest

from hippocampus import Client, Memory
from hippocampus.embeddings.base import LOCK_CHUNK
from hippocampus.embeddings.offline import OfflineEmbedder
from hippocampus.errors import EmbeddingError
from hippocampus.server import KeyRing, create_app
from tests.service_support import IN_PROCESS_URL, in_process

BATCH = 3000
QUERY = "where does bob keep his bicycle?"
HOLD_AT = 2  # A's chunk (1-based) that is in progress when B asks: mid-batch, the lock taken before
SERVED_WITHIN = 1  # A's chunks that may still run after the one in progress before B is served (FairLock grants in turn)
WAIT_GUARD = 200_000  # 1 ms polls: turns a search that never queues into a failure, never asserts speed


class _Recorder:
    """The real e5 model, every call recorded as (who, how many texts): "A" for A's batch, "B" for B's query;
    A's HOLD_AT-th chunk runs once B's query waits for the lock, and A's first chunk after B's query raises."""

    def __init__(self, model: Any, lock: Any):
        self.model, self.lock = model, lock
        self.calls: list[tuple[str, int]] = []
        self.held = threading.Event()
        self.served = threading.Event()

    def _call(self, texts: list[str], run: Any) -> Any:
        who = "A" if texts[0].startswith("note ") else "B" if list(texts) == [QUERY] else "-"  # "-": anything else
        if who == "A" and self.served.is_set():
            raise RuntimeError("the rest of tenant A's batch is not needed")
        if who == "A" and sum(1 for w, _ in self.calls if w == "A") + 1 == HOLD_AT:
            self.held.set()
            for _ in range(WAIT_GUARD):  # until B's search queues behind this chunk
                if self.lock.waiting():
                    break
                threading.Event().wait(0.001)
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
    """The app with two tenants (A: alice, B: bob) on a fresh collection, its e5 model recorded."""
    embedder = OfflineEmbedder()
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"fair_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add("I keep my bicycle in the garage behind the house", user_id="bob")
    key_a, key_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)  # 16 bytes can draw a letters-only key the start-up check rates at 125 bits
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{key_a}=alice;{key_b}=bob"})
    recorder = _Recorder(embedder._load(), embedder._lock)
    embedder._model = recorder
    try:
        with in_process(create_app(memory, keys, mcp=False, ui=False, close_memory=False)) as transport:
            yield transport, key_a, key_b, recorder, memory
    finally:
        embedder._model = recorder.model
        memory.close()


def test_another_tenants_search_runs_after_one_chunk_of_a_3000_text_batch(service):
    transport, key_a, key_b, recorder, memory = service
    items = [{"text": f"note {i}: I bought apples at the market on day {i}", "user_id": "alice"} for i in range(BATCH)]
    failed: list[BaseException] = []

    def tenant_a() -> None:
        with Client(IN_PROCESS_URL, api_key=key_a, transport=transport, timeout=600) as client:
            try:
                client.add_many(items)
            except EmbeddingError as exc:  # cut short on purpose once B was served
                failed.append(exc)

    batch = threading.Thread(target=tenant_a)
    batch.start()
    try:
        assert recorder.held.wait(300), "tenant A's batch never reached its chunk"
        with Client(IN_PROCESS_URL, api_key=key_b, transport=transport, timeout=600) as client:
            hits = client.search(QUERY, "bob").episodic
    finally:
        recorder.served.set()  # A's next chunk stops its batch, whatever happened above
        batch.join(300)
    assert not batch.is_alive() and failed, "tenant A's batch should have been cut short after B's search"
    assert [h.memory.text for h in hits][:1] == ["I keep my bicycle in the garage behind the house"]
    order = [who for who, _ in recorder.calls if who != "-"]
    a_before_b = order.index("B")  # A's chunks embedded before B's query
    # the bound, not the order: B waits out the chunk in progress when it asked and at most SERVED_WITHIN more
    assert HOLD_AT <= a_before_b <= HOLD_AT + SERVED_WITHIN, order
    assert a_before_b < -(-BATCH // LOCK_CHUNK), order  # long before the batch's last chunk
    assert all(n <= LOCK_CHUNK for who, n in recorder.calls if who == "A")
    assert memory.store.count("user_id == 'alice'") == 0  # the cut batch stored nothing
