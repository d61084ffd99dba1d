"""New memories' cross vectors written behind the add on a local store (store/xvector_behind.py): a reader
settles its user's rows first, a delete or rewrite of a pending or in-flight row wins, a failed embedding
loses no memory, and closing writes what is pending."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hippocampus import Memory
from hippocampus.store import xvector_behind
from hippocampus.store.xvector_behind import Behind

QUESTION = "我对哪种药过敏？"
ANSWER = "I'm allergic to penicillin; it gave me hives when I was a kid."


class Recorder:
    """A fake embedder and writer: what was embedded, in which batches, and what was written."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.embedded: list[list[str]] = []
        self.written: list[tuple[list[str], list[int]]] = []
        self.gate, self.fail = gate, fail
        self.started = threading.Event()
        self.lock = threading.RLock()

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded.append(list(texts))
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        if self.fail:
            raise RuntimeError("model gone")
        return np.ones((len(texts), 4), dtype=np.float32)

    def put(self, rows: list[dict], ids: list[int], vecs: np.ndarray) -> None:
        assert len(rows) == len(ids) == len(vecs)
        self.written.append(([r["user_id"] for r in rows], list(ids)))

    def behind(self, delay: float = 60.0) -> Behind:
        return Behind(self.embed, self.put, self.lock, delay=delay)


def rows(user: str, n: int, start: int = 0) -> tuple[list[dict], list[int]]:
    return [{"user_id": user, "memory_type": "episodic", "text": f"{user} {i}"} for i in range(start, start + n)], list(range(start, start + n))


def test_a_reader_settles_its_own_users_rows_only_and_close_writes_the_rest() -> None:
    rec = Recorder()
    b = rec.behind()  # the writer waits a minute: only readers and close write here
    b.defer(*rows("ann", 3))
    b.defer(*rows("bob", 2, start=10))
    b.settle("carl")  # nothing of carl's: nothing embedded
    assert rec.embedded == [] and b.pending == 5
    b.settle("bob")
    assert rec.embedded == [["bob 10", "bob 11"]] and rec.written == [(["bob", "bob"], [10, 11])] and b.pending == 3
    b.close()
    assert rec.written[-1] == (["ann"] * 3, [0, 1, 2]) and b.pending == 0


def test_rows_are_written_in_chunks_and_the_writer_needs_no_reader(monkeypatch) -> None:
    monkeypatch.setattr(xvector_behind, "CHUNK", 4)
    rec = Recorder()
    b = rec.behind(delay=0.01)
    b.defer(*rows("ann", 10))
    deadline = time.monotonic() + 30
    while b.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert b.pending == 0 and [len(t) for t in rec.embedded] == [4, 4, 2]
    assert sorted(i for _, ids in rec.written for i in ids) == list(range(10))
    b.close()


def test_a_writer_past_the_bound_writes_the_backlog_itself(monkeypatch) -> None:
    monkeypatch.setattr(xvector_behind, "MAX_PENDING", 5)
    rec = Recorder()
    b = rec.behind()
    b.defer(*rows("ann", 5))
    b.catch_up()
    assert rec.embedded == [] and b.pending == 5
    b.defer(*rows("bob", 1, start=5))
    b.catch_up()
    assert b.pending == 0 and sorted(i for _, ids in rec.written for i in ids) == list(range(6))
    b.close()


@pytest.mark.parametrize("during", ["pending", "in flight"])
def test_a_delete_or_rewrite_wins_over_the_row_written_behind(during: str) -> None:
    gate = threading.Event()
    rec = Recorder(gate=gate)
    b = rec.behind()
    b.defer(*rows("ann", 3))
    if during == "pending":
        with rec.lock:
            b.forget([1])
        gate.set()
        b.settle()
    else:
        t = threading.Thread(target=b.settle)
        t.start()
        assert rec.started.wait(30)  # the batch is being embedded, outside the store's lock
        with rec.lock:  # a delete, under the store's lock, meanwhile
            b.forget([1])
        gate.set()
        t.join(30)
    assert rec.written == [(["ann", "ann"], [0, 2])] and b.pending == 0
    b.close()


def test_a_failed_embedding_or_write_is_logged_and_its_rows_are_dropped(caplog) -> None:
    rec = Recorder(fail=True)
    b = rec.behind()
    b.defer(*rows("ann", 2))
    with caplog.at_level(logging.ERROR):
        b.settle("ann")
    assert rec.written == [] and b.pending == 0
    assert any("reembed --crosslang" in r.getMessage() for r in caplog.records)
    caplog.clear()

    def broken_put(rows, ids, vecs):
        raise OSError("disk full")

    b2 = Behind(Recorder().embed, broken_put, threading.RLock(), delay=60)
    b2.defer(*rows("bob", 1))
    with caplog.at_level(logging.ERROR):
        b2.settle("bob")  # a failed write never reaches the reader that settles
    assert b2.pending == 0 and any("disk full" in r.getMessage() for r in caplog.records)
    b.close()
    b2.close()


def test_through_memory_a_search_right_after_the_add_finds_it_a_delete_leaves_no_row_and_close_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with Memory(milvus_uri=path) as m:
        m.store.cross._behind_writer().delay = 60  # only readers and close write here
        kept = m.add(ANSWER, user_id="mei", infer=False).ids[0]
        assert m.store.cross._behind.pending == 1  # the add returned before its cross vector was made
        assert ANSWER in [h.text for h in m.search(QUESTION, user_id="mei", limit=3).all]  # the search settled it
        gone = m.add("I'm allergic to aspirin.", user_id="mei", infer=False).ids[0]
        m.delete(gone, user_id="mei")  # before its row was written: it never will be
        left = m.add("我对花粉过敏。", user_id="bob", infer=False).ids[0]
        assert m.store.cross._behind.pending == 1
    with Memory(milvus_uri=path) as m:  # close wrote bob's
        assert m.store.cross._ensure(create=False)  # opened (loaded) on first use
        ids = {int(r["id"]) for r in m.store.client.query(m.store.cross.name, filter="id >= 0", output_fields=["id"])}
        assert ids == {kept, left}
