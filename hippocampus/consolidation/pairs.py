"""The merge-and-separate pass of the consolidation job (PairPass), its candidates and its batched
separation writes, so that its cost grows with the memories and their k neighbours, never with n^2 or
with the store calls of each pair.

PairPass: for each episode its neighbours, each unordered pair once per run. Similarity only proposes:
the hard rules (rules.py) and the Merger's same-event judgement decide, a merge is written by Merges
(merges.py, crash-safe), and a pair judged different goes to the Separator.

Candidates: each anchor's neighbours come from one batched Milvus search per user and chunk, in the
user's bucket (store/buckets.py), at most k per anchor, with their vectors: a pair told apart reuses
them instead of reading them again.

SeparationBatch: a separation's rewrite (new texts, `separated_from` markers, SEPARATED events) waits
here and goes to the store with the others: one embedding call for the new texts, then the Writer's
rewrite_held (one read-check, one history write, one upsert) per batch. The pass flushes it at the end of
each chunk and before any merge (whose checks read the store). A crash before a flush loses only separations, which the
next run judges again: nothing destructive waits here.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..config import MemoryConfig
from ..embeddings import Embedder
from ..errors import LLMError
from ..models import ConsolidationStats, HistoryAction, HistoryEvent, MemoryRecord, MemoryType, Progress, now_ts
from ..processors.merger import EpisodicMerger
from ..processors.separator import EpisodicSeparator
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.writes import Writer
from ..text.days import strip_day_tags
from . import rules as R
from .merges import Merges
from .rows import event, fits, ids_by_user

J = TypeVar("J")  # a judge's result (MergeResult, SeparationResult)
log = logging.getLogger(__name__)
EPISODIC = MemoryType.EPISODIC.value
BATCH = 256  # separations held before a flush (a chunk's end flushes sooner)
CHUNK = 1024  # anchors per batched search: a filtered milvus-lite search costs about the same for 1 or 1024 vectors

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


class PairPass:
    """The merge-and-separate pass of one consolidation run: for each episode its neighbours (Candidates),
    each unordered pair once; the hard rules and the Merger's same-event judgement decide a merge (written
    by Merges, merges.py), and a pair judged different goes to the Separator (held in a SeparationBatch)."""

    def __init__(self, store: MilvusStore, embedder: Embedder, merger: EpisodicMerger, separator: EpisodicSeparator,
                 thresholds: tuple[float, float], config: MemoryConfig, lock: AbstractContextManager[Any],
                 stats: ConsolidationStats, writes: Writer, merges: Merges):
        self.store, self.embedder, self.merger, self.separator = store, embedder, merger, separator
        self.thresholds, self.config, self._lock, self.stats = thresholds, config, lock, stats
        self.writes, self.merges = writes, merges
        self._batch: SeparationBatch | None = None  # the pass's held separations, made by `run`

    def run(self, scope: str, notify: Progress) -> None:
        """Every episode in scope, a chunk of anchors at a time: their neighbours, then each new pair judged."""
        by_user = ids_by_user(self.store, scope)
        total, done = sum(len(v) for v in by_user.values()), 0
        gone: set[int] = set()
        seen: set[tuple[int, int]] = set()
        fresh: dict[int, dict[str, Any]] = {}  # rows rewritten during this run, with their vectors
        candidates = Candidates(self.store, self.config.consolidation_neighbours, self.stats)
        self._batch = SeparationBatch(self.writes, self.embedder, self._lock, self.stats, fresh, candidates)
        for ids in by_user.values():
            for start in range(0, len(ids), CHUNK):
                chunk = [i for i in ids[start : start + CHUNK] if i not in gone]
                rows = self.store.by_ids(chunk, [*MEMORY_FIELDS, "vector"])
                anchors = [fresh.get(int(r["id"]), r) for r in rows if not (r.get("metadata") or {}).get("pending_decision")]
                neighbours = candidates.neighbours(anchors)  # fresh rows have their vectors: the last chunk's flush embedded them
                for anchor_id in ids[start : start + CHUNK]:
                    done += 1
                    notify("pairs", done, total)
                    if anchor_id in neighbours and anchor_id not in gone:
                        self._examine(fresh.get(anchor_id) or neighbours[anchor_id][0], neighbours[anchor_id][1], gone, seen, fresh)
                self._batch.flush()

    def _examine(self, row: dict[str, Any], hits: list[dict[str, Any]], gone: set[int], seen: set[tuple[int, int]],
                 fresh: dict[int, dict[str, Any]]) -> None:
        self.stats.examined += 1
        anchor = MemoryRecord.from_row(row)
        for hit in hits:
            other_id = int(hit["id"])
            if other_id == anchor.id or other_id in gone:
                continue
            key = R.pair_key(anchor.id, other_id)
            if key in seen:
                continue
            seen.add(key)
            similarity = float(hit["_distance"])
            kind = R.classify(similarity, self.thresholds)
            if kind == "none":
                break  # hits come best first
            self.stats.candidate_pairs += 1
            other = MemoryRecord.from_row(fresh.get(other_id) or hit)
            if other.metadata.get("pending_decision"):
                continue
            outcome = self._pair(anchor, other, similarity, kind)
            if outcome == "merged":
                gone.update((anchor.id, other.id))
                return
            if isinstance(outcome, tuple):
                fresh[anchor.id], fresh[other.id] = outcome
                anchor = MemoryRecord.from_row(outcome[0])

    def _pair(self, a: MemoryRecord, b: MemoryRecord, similarity: float, kind: str) -> Any:
        if R.already_separated(a.metadata, b.metadata, a.id, b.id) or not R.pair_considered(a, b):
            return None  # judged distinct before, or two agents' (never judged together): nothing to do
        allowed, why = R.merge_allowed(a, b, self.config.merge_time_window_same_chat, self.config.merge_time_window_diff_chat)
        reason = why
        if kind == "merge_candidate" and allowed:
            result = self._ask("merge", a, b, self.merger.merge)
            if result is None:
                return None
            if result.same_event and fits(result.text):
                details = {"similarity": similarity, "reason": result.reason, **result.facts_details()}
                if not self._merge(a, b, result.text.strip(), result.context, result.thing, details):
                    return None
                self.stats.merged += 1
                return "merged"
            reason = f"not the same event: {result.reason}"
        sep = self._ask("separation", a, b, self.separator.separate)
        return None if sep is None else self._separate(a, b, sep, similarity, reason)

    def _ask(self, what: str, a: MemoryRecord, b: MemoryRecord, judge: Callable[[MemoryRecord, MemoryRecord], J]) -> J | None:
        """One judgement of the pair, counted (the fact guard's second ask too); None when the LLM failed:
        the pair is skipped, judged again next run."""
        self.stats.llm_calls += 1
        try:
            result = judge(a, b)
        except LLMError as exc:
            self.stats.errors += 1
            log.warning("%s of %s and %s skipped: %s", what, a.id, b.id, exc)
            return None
        self.stats.llm_calls += result.asked_again  # type: ignore[attr-defined]
        return result

    def _merge(self, a: MemoryRecord, b: MemoryRecord, text: str, context: str, thing: str, details: dict[str, Any]) -> bool:
        """Separations held for writing go first (the merge's checks read the store), then the merge (merges.py)."""
        if self._batch is not None:
            self._batch.flush()
        return self.merges.write(a, b, text, context, thing, details)

    def _separate(self, a: MemoryRecord, b: MemoryRecord, sep: Any, similarity: float, reason: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The pair told apart: its rows rewritten (new texts, markers) and its events, held in the
        pass's SeparationBatch and written with the others."""
        now = now_ts()
        texts = [strip_day_tags(t) if fits(t) else r.text for t, r in ((sep.text_a, a), (sep.text_b, b))]  # days are metadata
        vectors: list[list[float] | None] = [None, None]  # a new text is embedded at the flush; an unchanged one keeps its vector
        for i, record in enumerate((a, b)):
            if texts[i] == record.text:
                known, vectors[i] = self._batch.candidates.vector(record.id) if self._batch else (False, None)
                if not known:
                    vectors[i] = self.store.vectors([record.id]).get(record.id)
                    if vectors[i] is None:
                        return None  # deleted meanwhile (a user's delete racing this run): nothing to separate
        rows = []
        for i, (record, other, context) in enumerate(((a, b, sep.context_a), (b, a, sep.context_b))):
            meta = {**record.metadata, "separated_from": R.dedupe([*(record.metadata.get("separated_from") or []), other.id]), "updated_at": now}
            if context:
                meta["context"] = context
            rows.append(record.model_copy(update={"text": texts[i], "metadata": meta}).to_row(vectors[i]))
        # a Separator may find nothing to tell apart: then only the markers are written (so the pair is not
        # judged again), nothing is counted and history records no change
        changed_any = [row["text"] != r.text or row["metadata"].get("context", "") != r.metadata.get("context", "")
                       for r, row in ((a, rows[0]), (b, rows[1]))]
        events = [event(r, HistoryAction.SEPARATED, old_text=r.text, new_text=row["text"],
                        details={"separated_from": o.id, "similarity": similarity, "reason": reason or sep.reason,
                                 "old_context": r.metadata.get("context", ""), "new_context": row["metadata"].get("context", ""),
                                 **sep.facts_details()}) if ch else None
                  for r, o, row, ch in ((a, b, rows[0], changed_any[0]), (b, a, rows[1], changed_any[1]))]
        assert self._batch is not None  # the pass made it
        self._batch.add((a, b), rows, events, changed_any)
        return rows[0], rows[1]
