"""The in-memory copy of a local store's cross-language vectors (store/xvector.py): one user's vectors
(`UserVectors`, a matrix product per search), the background read that fills the copy (`Loader`) and
its reading of the companion (`read_all`). Split from xvector.py, which keeps the companion collection
itself, its writes and its searches through Milvus."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import filters as F
from .schema import XVECTOR

XVEC_FIELDS = ["id", "user_id", "memory_type", "script"]
LIST_MAX = 16384  # ids of one bucket listed in one query (Milvus's most rows a query returns)
YIELD_S = 0.002  # the background read's pause between two of its store calls (`read_all`)

log = logging.getLogger(__name__)


class UserVectors:
    """One user's cross vectors in memory (local stores only): ids, kinds and unit rows."""

    def __init__(self, rows: Sequence[dict[str, Any]], dim: int):
        self.pos: dict[int, int] = {}
        self.ids: list[int] = []
        self.kinds: list[str] = []
        self.scripts: list[str] = []
        self.mat = np.zeros((0, dim), dtype=np.float32)
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self.put(rows)

    def put(self, rows: Sequence[dict[str, Any]], vecs: np.ndarray | None = None) -> None:
        """Add or replace rows (`vecs`: their unit vectors, when already read; else from the rows)."""
        if not rows:
            return
        vecs = units([r[XVECTOR] for r in rows]) if vecs is None else vecs
        self._arrays = None
        fresh = []
        for r, v in zip(rows, vecs):
            i = int(r["id"])
            if i in self.pos:
                self.mat[self.pos[i]] = v
                self.kinds[self.pos[i]], self.scripts[self.pos[i]] = str(r["memory_type"]), str(r["script"])
            else:
                self.pos[i] = len(self.ids) + len(fresh)
                fresh.append((i, str(r["memory_type"]), str(r["script"]), v))
        if fresh:
            self.ids += [f[0] for f in fresh]
            self.kinds += [f[1] for f in fresh]
            self.scripts += [f[2] for f in fresh]
            self.mat = np.vstack([self.mat, np.stack([f[3] for f in fresh])])

    def drop(self, ids: Sequence[int]) -> None:
        gone = {int(i) for i in ids} & self.pos.keys()
        if not gone:
            return
        self._arrays = None
        keep = [k for k, i in enumerate(self.ids) if i not in gone]
        self.ids = [self.ids[k] for k in keep]
        self.kinds = [self.kinds[k] for k in keep]
        self.scripts = [self.scripts[k] for k in keep]
        self.mat = self.mat[keep]
        self.pos = {i: k for k, i in enumerate(self.ids)}

    def nearest(self, qx: np.ndarray, kinds: Sequence[str] | None, scripts: Sequence[str], k: int) -> list[tuple[int, float]]:
        if not self.ids:
            return []
        labels = self._labels()
        sims = self.mat @ qx
        keep = np.isin(labels[0], list(scripts))
        if kinds is not None:
            keep &= np.isin(labels[1], list(kinds))
        sims = np.where(keep, sims, -np.inf)
        k = min(k, len(self.ids))
        top = np.argpartition(-sims, k - 1)[:k]
        return [(self.ids[j], float(sims[j])) for j in sorted(top, key=lambda j: -sims[j]) if np.isfinite(sims[j])]

    def holds(self, scripts: Sequence[str]) -> bool:
        """Whether any of these vectors belongs to a memory written in one of `scripts`."""
        return bool(self.ids) and bool(np.isin(self._labels()[0], list(scripts)).any())

    def _labels(self) -> tuple[np.ndarray, np.ndarray]:
        if self._arrays is None:  # the labels as arrays once per change, not once per search (~2 ms at 10k)
            self._arrays = (np.asarray(self.scripts), np.asarray(self.kinds))
        return self._arrays

    def cosine(self, memory_id: int, qx: np.ndarray) -> float | None:
        k = self.pos.get(int(memory_id))
        return None if k is None else float(self.mat[k] @ qx)


def units(vecs: Any) -> np.ndarray:
    m = np.asarray(vecs, dtype=np.float32).reshape(len(vecs), -1)
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(n > 0, n, 1.0)


class Loader:
    """Reads every user's cross vectors into memory in one background thread, started by the process's second
    search that needs them (store/xvector.py `_loaded`); until it is done, searches go through Milvus. Measured against reading a user's
    vectors in their first search and against reading one user at a time in the background
    (scripts/bench_xvector_load.py, docs/crosslang.md): one paged read of the whole companion was the
    fastest and, converted to float32 page by page, costs no transient copy in Python floats.
    Writes made while it reads are journalled and replayed before the copy is installed, so the copy
    never misses one (the journal and the install run under the store's lock, as the writes do)."""

    def __init__(self, cross: Any):
        self.cross = cross
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._journal: list[tuple[str, Any]] | None = None  # writes seen while reading (under the store's lock)
        self._stop = threading.Event()
        self.done = False

    def want(self, user_id: str) -> None:
        """A search of `user_id` found no copy (called under the store's lock)."""
        with self._cv:
            if self._thread is not None or self.done or self._stop.is_set():
                return
            self._journal = []
            self._thread = threading.Thread(target=self._run, name="hippocampus-xvec-loader", daemon=True)
            self._thread.start()

    def journal(self, entry: tuple[str, Any]) -> None:
        if self._journal is not None:
            self._journal.append(entry)

    def stop(self, timeout: float = 30.0) -> None:
        """Before the store closes: the read ends after the page in progress (a process that searched once and
        exits must not leave it reading from a closed store: pymilvus logged its reconnection failures then)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wait(self, timeout: float | None) -> bool:
        with self._cv:
            return self._cv.wait_for(lambda: self._thread is None, timeout)

    def _run(self) -> None:
        cross = self.cross
        try:
            by_user: dict[str, tuple[list[dict[str, Any]], list[np.ndarray]]] = {}
            for rows, vecs in cross._pages():
                if self._stop.is_set():
                    self._journal = None
                    return  # the store is closing: nothing installed, Milvus answered until now
                for k, r in enumerate(rows):
                    got = by_user.setdefault(str(r["user_id"]), ([], []))
                    got[0].append(r)
                    got[1].append(vecs[k])
            with cross.host._lock:
                dim = cross.embedder.dim
                fresh = {u: UserVectors([], dim) for u in by_user}
                for u, (rows, vecs) in by_user.items():
                    fresh[u].put(rows, np.stack(vecs))
                for kind, what in self._journal or []:  # the writes made while reading, in order
                    if kind == "put":
                        for u in {d["user_id"] for d in what}:
                            if u in fresh:
                                fresh[u].put([d for d in what if d["user_id"] == u])
                    else:
                        for vectors in fresh.values():
                            vectors.drop(what)
                for u, vectors in fresh.items():
                    cross._users.setdefault(u, vectors)
                cross.all_loaded = True  # a user with no row now has none: an empty copy, not a Milvus search
                self._journal = None
                self.done = True
        except Exception:  # the store was closed meanwhile, or the read failed: Milvus keeps answering
            log.debug("reading the cross vectors failed", exc_info=True)
            self._journal = None
        finally:
            with self._cv:
                self._thread = None
                self._cv.notify_all()


def read_all(cross: Any, size: int = 200, whole: int = 400, listing: int = 2500) -> Any:
    """Every row of `cross`'s companion (store/xvector.py CrossVectors), a page at a time: (rows without their vectors, their unit vectors as
    float32). Bucket by bucket: a bucket of up to `whole` rows in one query (milvus-lite scans only that
    bucket: 10,000 rows of 100 users in ~1.1 s), a larger one, and an older companion without buckets, as
    ids listed first, then `size` at a time by id (its primary key), where milvus-lite's query iterator
    over the whole companion spent ~40 ms on each page of 200, filtering every row for each (2.5 s in
    all). The store's lock is taken per call, and after each the read pauses a moment, so a search or a
    write waiting for the lock takes it before the next call (Python's lock is not fair: the read took
    it back at once, and a search waited for several pages at each of its store calls; scripts/
    bench_xvector_load.py counts the searches during the read). Pages of 200-400 also keep few of the 512
    Python floats a row alive (milvus-lite's gRPC call makes them on both sides; pages of 500 set a
    bench process's peak, stop 51). Rows written or deleted meanwhile: the loader's journal."""
    with cross.host._lock:
        names = cross.host._call("list_partitions", cross.name)
    fields = [*XVEC_FIELDS, XVECTOR]
    for part in ([[n] for n in sorted(names) if n != "_default"] if cross.bucketed else [None]):
        if part is not None:
            with cross.host._lock:
                rows = cross.host._call("query", cross.name, filter="", output_fields=fields, limit=whole + 1, partition_names=part)
            time.sleep(YIELD_S)
            if len(rows) <= whole:
                if rows:
                    yield _page(rows)
                continue
        ids = _ids(cross, part, listing)
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            with cross.host._lock:
                rows = cross.host._call("query", cross.name, filter=F.in_("id", chunk), partition_names=part,
                                       output_fields=fields, limit=len(chunk))
            time.sleep(YIELD_S)
            if rows:
                yield _page(rows)

def _page(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], np.ndarray]:
    vecs = units([r[XVECTOR] for r in rows])  # 512 floats a row as Python objects: gone page by page
    return [{k: r[k] for k in XVEC_FIELDS} for r in rows], vecs

def _ids(cross: Any, part: list[str] | None, listing: int) -> list[int]:
    """The ids of one bucket (`part`) or of the whole companion (None), under the lock per call: a bucket
    in one query (a query iterator costs ~40 ms to start); the whole of an older companion, or a bucket
    of more than `LIST_MAX` rows, by id-only pages."""
    if part is not None:
        with cross.host._lock:
            rows = cross.host._call("query", cross.name, filter="", output_fields=["id"], limit=LIST_MAX,
                                   partition_names=part)
        time.sleep(YIELD_S)
        if len(rows) < LIST_MAX:
            return [int(r["id"]) for r in rows]
    ids: list[int] = []
    with cross.host._lock:
        it = cross.host._call("query_iterator", cross.name, batch_size=listing, filter="", output_fields=["id"],
                             partition_names=part)
    try:
        while True:
            with cross.host._lock:
                page = it.next()
            if not page:
                return ids
            ids += [int(r["id"]) for r in page]
            time.sleep(YIELD_S)
    finally:
        it.close()
