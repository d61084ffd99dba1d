"""The merge-and-separate pass's candidates and its batched separation writes, so that its cost
grows with the memories and their k neighbours, never with the store calls of each pair.

Candidates: each anchor's neighbours come from one batched Milvus search per user and chunk, in the
user's bucket (store/buckets.py), at most k per anchor, with their vectors: a pair told apart reuses
them instead of reading them again (similarity only proposes; the Merger and the Separator judge).

SeparationBatch: a separation's rewrite (new texts, `separated_from` markers, SEPARATED events) waits
here and goes to the store with the others: one embedding call for the new texts, then the Writer's
rewrite_held (one read-check, one history write, one upsert) per batch. The job flushes it at the end of
each chunk and before any merge (whose checks read the store). A crash before a flush loses only separations, which the
next run judges again: nothing destructive waits here.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..embeddings import Embedder
from ..models import ConsolidationStats, HistoryEvent, MemoryRecord, MemoryType
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.writes import Writer

EPISODIC = MemoryType.EPISODIC.value
BATCH = 256  # separations held before a flush (a chunk's end flushes sooner)

Neighbours = dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]


class Candidates:
    """Neighbour searches for the anchors of one chunk, and the vectors they brought back."""

    def __init__(self, store: MilvusStore, k: int, stats: ConsolidationStats):
        self.store, self.k, self.stats = store, k, stats
        self.vectors: dict[int, list[float] | None] = {}  # id -> its vector; None: a new text waiting for its batch

    def neighbours(self, anchors: list[dict[str, Any]]) -> Neighbours:
        """One batched search per user in the chunk, each anchor with its own stored vector: at most k
        neighbours each (k + 1 hits: the anchor finds itself), best first."""
        by_user: dict[str, list[dict[str, Any]]] = {}
        for row in anchors:
            by_user.setdefault(row["user_id"], []).append(row)
        out: Neighbours = {}
        for user, rows in by_user.items():
            scope = F.and_(F.eq("user_id", user), F.eq("memory_type", EPISODIC))
            results = self.store.search_dense([r["vector"] for r in rows], scope, self.k + 1, fields=[*MEMORY_FIELDS, "vector"],
                                              partition=self.store.partition_for(user))
            self.stats.similarity_lookups += len(rows)
            for row, hits in zip(rows, results):
                out[int(row["id"])] = (row, hits)
                for hit in (row, *hits):
                    self.vectors.setdefault(int(hit["id"]), hit.get("vector"))
        return out

    def vector(self, memory_id: int) -> tuple[bool, list[float] | None]:
        """(known, vector): a vector this pass has (None while its new text waits for the batch's
        embedding); not known: the caller reads the store."""
        return (memory_id in self.vectors, self.vectors.get(memory_id))


@dataclass
class _Separation:
    read: tuple[MemoryRecord, MemoryRecord]  # the pair as the Separator judged it
    rows: list[dict[str, Any]]  # their rewritten rows ("vector" None: the new text is embedded at the flush)
    events: list[HistoryEvent | None]  # per record: its SEPARATED event, None when nothing of it changed
    changed: list[bool]


class SeparationBatch:
    """Separations waiting to be written together (see the module's docstring)."""

    def __init__(self, writes: Writer, embedder: Embedder, lock: AbstractContextManager[Any], stats: ConsolidationStats,
                 fresh: dict[int, dict[str, Any]], candidates: Candidates, limit: int = BATCH):
        """`fresh` is the pass's rows rewritten during this run (the job reads pairs from it): a row the
        flush could not write (deleted or edited meanwhile) leaves it, so the store's version is read again."""
        self.writes, self.embedder, self._lock, self.stats = writes, embedder, lock, stats
        self.fresh, self.candidates, self.limit = fresh, candidates, limit
        self.pending: list[_Separation] = []

    def add(self, read: tuple[MemoryRecord, MemoryRecord], rows: list[dict[str, Any]], events: Sequence[HistoryEvent | None],
            changed: Sequence[bool]) -> None:
        """Hold one separation's rows and events; flush when the batch is full."""
        self.pending.append(_Separation(read, rows, list(events), list(changed)))
        for row in rows:
            self.candidates.vectors[int(row["id"])] = row.get("vector")
        if len(self.pending) >= self.limit:
            self.flush()

    def flush(self) -> None:
        """Embed the new texts at once, then write every held row (the latest of each memory, checked
        against the memory as first read: an edit or a delete meanwhile stands) and its events."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        self._embed([row for s in pending for row in s.rows if row.get("vector") is None])
        latest: dict[int, dict[str, Any]] = {}
        first: dict[int, MemoryRecord] = {}
        for s in pending:
            for record, row in zip(s.read, s.rows):
                latest[record.id] = row
                first.setdefault(record.id, record)
        with self._lock:  # the Writer: the events first, a memory deleted or edited meanwhile skipped with its events
            written = self.writes.rewrite_held(list(latest.values()), list(first.values()),
                                               [e for s in pending for e in s.events if e is not None])
        for s in pending:  # memories, each once per run; the pair in separated_pairs
            if any(s.changed) and any(r.id in written for r in s.read):
                self.stats.count_separated([r.id for r, ch in zip(s.read, s.changed) if ch and r.id in written])
        for memory_id in set(latest) - written:  # not written: the pass reads the store's version again
            self.fresh.pop(memory_id, None)
            self.candidates.vectors.pop(memory_id, None)

    def _embed(self, rows: list[dict[str, Any]]) -> None:
        """One embedding call for the held rows' new texts (each distinct text once)."""
        texts = list(dict.fromkeys(row["text"] for row in rows))
        if not texts:
            return
        vectors = dict(zip(texts, (v.tolist() for v in self.embedder.encode(texts, role="passage"))))
        for row in rows:
            row["vector"] = vectors[row["text"]]
            self.candidates.vectors[int(row["id"])] = row["vector"]
