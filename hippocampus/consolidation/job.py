"""The offline consolidation job, an orchestrator.

For each episodic memory its neighbours come from one Milvus similarity search with
the record's own stored vector (so the work grows with n x k, never n^2); each
unordered pair is considered once per run. Similarity only proposes: the hard rules
and the Merger's same-event judgement decide, and a pair judged different goes to the
Separator. The SemanticWriter distils episodes not yet distilled (before the
merge pass, from their original wording; a merge of two distilled episodes stays distilled).

Crash safety: a merged record is written first, flagged `merge_pending` and listing
`merged_from_ids`; only then are the originals deleted and the flag cleared. A run
starts by finishing any merge a crash interrupted, so a crash at any point loses
nothing and a re-run converges without duplicates.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ..config import MemoryConfig
from ..context import MemoryContext
from ..embeddings import Embedder
from ..errors import LLMError
from ..lifecycle.decay import forgotten_row
from ..llm import ChatModel
from ..models import ConsolidationStats, HistoryAction, HistoryEvent, MemoryRecord, MemoryType, Progress, now_ts
from ..processors.merger import EpisodicMerger
from ..processors.separator import EpisodicSeparator
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.leases import LeaseLost
from ..store.removal import remove_with_history
from ..store.writes import Writer
from ..text.days import strip_day_tags
from . import rules as R
from .distill import Distiller
from .merged_row import build_merged_row
from .pairs import Candidates, SeparationBatch
from .rows import event, fits, ids_by_user, unchanged

log = logging.getLogger(__name__)
ACTOR = "consolidation"
CHUNK = 1024  # anchors per batched search: a filtered milvus-lite search costs about the same for 1 or 1024 vectors
EPISODIC = MemoryType.EPISODIC.value
SEMANTIC = MemoryType.SEMANTIC.value


def thresholds_for(config: MemoryConfig, model_name: str) -> tuple[float, float]:
    """(ambiguous_low, merge_high): explicit settings first, then the table for the embedder in use."""
    table = config.thresholds.get(model_name)
    if table is None:
        return config.merge_thresholds
    low = config.t_amb_low if config.t_amb_low is not None else table["ambiguous"]
    high = config.t_merge_high if config.t_merge_high is not None else table["merge"]
    return low, high


class ConsolidationJob:
    """One consolidation run over the store; uses the store, the embedder and the processors."""

    def __init__(
        self,
        store: MilvusStore,
        embedder: Embedder,
        llm: ChatModel,
        config: MemoryConfig,
        write_lock: threading.Lock | None = None,
        honour: Any = None,
        writes: Writer | None = None,
    ):
        """`writes`: the Writer every row goes through (the facade's, from_context; else one of the job's own).
        `honour` (memory/forget.py's Honour, handed in by name): what a pending turn says about the memory
        itself (a forget request, a correction) is honoured as add(infer=True) honours it; None: not at all."""
        from ..processors.semantic_writer import SemanticWriter
        from ..processors.write_decider import EpisodicWriteDecider

        self.store = store
        self.embedder = embedder
        self.config = config
        from ..processors.base import build

        # built as MemoryContext.processor builds them: the project's categories and instructions reach the
        # nightly decision too (issue 40, case 6)
        self.merger, self.separator, self.extractor, self.decider = (
            build(P, llm, config) for P in (EpisodicMerger, EpisodicSeparator, SemanticWriter, EpisodicWriteDecider))
        self.thresholds = thresholds_for(config, embedder.model_name)
        self._lock: AbstractContextManager[Any] = write_lock if write_lock is not None else nullcontext()
        # the one write path (store/writes.py); the job holds the lock across its checks and calls its *_held methods
        self.writes = writes or Writer(store, embedder, write_lock or threading.Lock())
        self.honour = honour
        self.stats = ConsolidationStats()
        # the run's lease check (store/leases.py), before each destructive step: a replica that lost its
        # lease raises LeaseLost there and deletes nothing; the next holder finishes the work
        self.fence: Callable[[], None] = lambda: None
        self._batch: SeparationBatch | None = None  # the merge-and-separate pass's held separations (pairs.py)

    @classmethod
    def from_context(cls, ctx: MemoryContext, honour: Any = None) -> ConsolidationJob:
        """The job over a facade's context: its store, embedder, chat model, settings and write lock."""
        return cls(ctx.store, ctx.embedder, ctx.llm, ctx.config, write_lock=ctx.write_lock, honour=honour, writes=ctx.writer)

    def checkpoint(self, name: str) -> None:
        """Called between the writes of one change; a no-op hook the crash tests pause at."""

    # ------------------------------------------------------------------ run
    def run(self, user_id: str | None = None, progress: Progress | None = None) -> ConsolidationStats:
        started = time.perf_counter()
        self.stats = ConsolidationStats()
        notify: Progress = progress or (lambda phase, done, total: None)
        scope = F.and_(F.eq("user_id", user_id) if user_id is not None else None, F.eq("memory_type", EPISODIC))
        self._finish_interrupted_merges(scope)
        self._decide_pending(scope, notify)
        # Distil first, from the episodes' own words (a separation may add date tags to a text).
        Distiller(self.store, self.embedder, self.extractor, self.config.k_semantic, self._lock, self.stats, self.checkpoint,
                  fence=lambda: self.fence(), writes=self.writes).run(scope, notify)
        self._merge_and_separate(scope, notify)
        self.stats.seconds = round(time.perf_counter() - started, 3)
        return self.stats

    # ------------------------------------------------------------------ recovery
    def _finish_interrupted_merges(self, scope: str) -> None:
        """Merged records still flagged merge_pending: delete their sources (if any are left), clear the flag."""
        for row in self.store.query(F.and_(scope, F.json_eq("metadata", "merge_pending", True))):
            merged = MemoryRecord.from_row(row)
            self._log_creation(merged)
            self._delete_sources(merged, [int(i) for i in merged.metadata.get("merged_from_ids") or []], recovering=True)
            self._clear_pending_flag(merged)

    def _delete_sources(self, merged: MemoryRecord, source_ids: Sequence[int], recovering: bool = False) -> None:
        """Each source's MERGED event (its row kept, so that Memory.undo can bring it back), then the
        sources themselves (removal.py); on recovery, sources whose event a crash left are not logged twice."""
        with self._lock:
            # primary-key look-up (fast), then the tenant check on the rows themselves
            rows = self.store.query(F.in_("id", source_ids), limit=max(1, len(source_ids)))
            sources = [MemoryRecord.from_row(r) for r in rows if r["user_id"] == merged.user_id]
            if sources:
                logged = self._logged_sources(merged, [s.id for s in sources]) if recovering else set()
                events = [HistoryEvent(memory_id=s.id, user_id=s.user_id, action=HistoryAction.MERGED, old_text=s.text,
                                       new_text=merged.text, actor=ACTOR, details={"merged_into": merged.id, "row": forgotten_row(s)})
                          for s in sources if s.id not in logged]
                ids = [s.id for s in sources]
                self.fence()
                remove_with_history(self.store, [e.model_dump(mode="json") for e in events], F.in_("id", ids), ids)
        self.checkpoint("merge_sources_deleted")

    def _log_creation(self, merged: MemoryRecord) -> None:
        """The merged record's own MERGED event, when a crash came between its insert and that event."""
        events = self.store.history(F.and_(F.eq("memory_id", merged.id), F.eq("action", HistoryAction.MERGED.value)))
        if not any("merged_from_ids" in (e.get("details") or {}) for e in events):
            self.writes.history(merged, HistoryAction.MERGED, ACTOR, new_text=merged.text,
                                details={"merged_from_ids": merged.metadata.get("merged_from_ids") or []})

    def _logged_sources(self, merged: MemoryRecord, ids: list[int]) -> set[int]:
        """Sources that already have their MERGED event into `merged` (a crash came between it and the delete)."""
        events = self.store.history(F.and_(F.in_("memory_id", ids), F.eq("user_id", merged.user_id),
                                           F.eq("action", HistoryAction.MERGED.value)))
        return {int(e["memory_id"]) for e in events if (e.get("details") or {}).get("merged_into") == merged.id}

    def _clear_pending_flag(self, merged: MemoryRecord) -> None:
        meta = {k: v for k, v in merged.metadata.items() if k != "merge_pending"}
        self._upsert(merged, merged.text, meta)

    # ------------------------------------------------------------------ pending decisions
    def _decide_pending(self, scope: str, notify: Progress) -> None:
        """Raw turns kept pending (`write_decision: deferred`, or the LLM was unavailable): ask the
        WriteDecider again. A forget request in the turn is honoured and never stored (only the rest is
        decided); a correction supersedes what it corrects (memory/forget.py, as add(infer=True) does)."""
        rows = self.store.query(F.and_(scope, F.json_eq("metadata", "pending_decision", True)))
        for n, row in enumerate(rows, 1):
            notify("pending", n, len(rows))
            record = MemoryRecord.from_row(row)
            said = str(record.metadata.get("source_text") or record.text)
            asks, rest = self.honour.split(said) if self.honour is not None else ([], said)
            forgot = self.honour.forget(record.user_id, asks, skip={record.id}) if asks else []
            if asks and not rest:  # the rules are certain: a forget request alone is never stored
                self.stats.pending_decided += 1
                self._drop_pending(record, f"a forget request (not stored); forgot memories {forgot}")
                continue
            turns = [{"role": "user", "content": rest}]
            self.stats.llm_calls += 1
            try:
                decision = self.decider.decide(record.chat_id, turns, now_iso=record.time_iso)
            except LLMError as exc:
                self.stats.errors += 1
                log.warning("pending decision for memory %s failed again: %s", record.id, exc)
                continue
            self.stats.pending_decided += 1
            if not decision.write_episodic and not (self.honour is not None and self.honour.is_correction(rest)):  # a correction keeps the new state (memory/forget.py)
                self._drop_pending(record, "write decider: not worth remembering")
                continue
            # as the online path stores a positive decision: the decided `thing` as text, the raw turn beside it
            text = (decision.thing or "").strip() or record.text
            meta = {k: v for k, v in record.metadata.items() if k != "pending_decision"}
            meta.update({"context": decision.context or meta.get("context", ""), "thing": text, "source_text": record.text,
                         "updated_at": now_ts()})
            self._upsert(record, text if fits(text) else record.text, meta, action=HistoryAction.UPDATED,
                         details={"reason": "pending decision: kept"})
            if self.honour is not None:
                self.honour.correct(record.user_id, said, [record.id], record.ts)

    def _drop_pending(self, record: MemoryRecord, reason: str) -> None:
        """A pending turn not kept: its DELETED event first, then the row (it came from this user's scope)."""
        with self._lock:
            dropped = event(record, HistoryAction.DELETED, old_text=record.text, details={"reason": reason})
            self.fence()
            remove_with_history(self.store, [dropped.model_dump(mode="json")], F.eq("id", record.id), [record.id])

    def decide_pending(self, user_id: str | None = None, limit: int | None = None,
                       progress: Progress | None = None) -> ConsolidationStats:
        """The pending phase alone (Memory.decide_pending, for a background worker): at most `limit`
        pending turns of this user (all users when None) are decided; nothing is merged or distilled."""
        started = time.perf_counter()
        self.stats = ConsolidationStats()
        scope = F.and_(F.eq("user_id", user_id) if user_id is not None else None, F.eq("memory_type", EPISODIC))
        if limit is not None:
            rows = self.store.query(F.and_(scope, F.json_eq("metadata", "pending_decision", True)), ["id"], limit=limit) if limit else []
            scope = F.and_(scope, F.in_("id", [int(r["id"]) for r in rows]))
        self._decide_pending(scope, progress or (lambda phase, done, total: None))
        self.stats.seconds = round(time.perf_counter() - started, 3)
        return self.stats

    # ------------------------------------------------------------------ merge / separate
    def _merge_and_separate(self, scope: str, notify: Progress) -> None:
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
                rows = self.store.query(F.in_("id", chunk), [*MEMORY_FIELDS, "vector"], limit=len(chunk)) if chunk else []
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
            self.stats.llm_calls += 1
            try:
                result = self.merger.merge(a, b)
            except LLMError as exc:
                self.stats.errors += 1
                log.warning("merge of %s and %s skipped: %s", a.id, b.id, exc)
                return None
            self.stats.llm_calls += result.asked_again  # the fact guard asked once more
            if result.same_event and fits(result.text):
                details = {"similarity": similarity, "reason": result.reason, **result.facts_details()}
                if not self._merge(a, b, result.text.strip(), result.context, result.thing, details):
                    return None
                self.stats.merged += 1
                return "merged"
            reason = f"not the same event: {result.reason}"
        self.stats.llm_calls += 1
        try:
            sep = self.separator.separate(a, b)
        except LLMError as exc:
            self.stats.errors += 1
            log.warning("separation of %s and %s skipped: %s", a.id, b.id, exc)
            return None
        self.stats.llm_calls += sep.asked_again
        return self._separate(a, b, sep, similarity, reason)

    def _merge(self, a: MemoryRecord, b: MemoryRecord, text: str, context: str, thing: str, details: dict[str, Any]) -> bool:
        """Write the merged record first (flagged merge_pending), then delete the sources, then clear the flag.
        Separations held for writing go first: the checks below read the store."""
        if self._batch is not None:
            self._batch.flush()
        row = build_merged_row(a, b, text, context, thing, now_ts())
        row["vector"] = self.embedder.encode([text], role="passage")[0].tolist()
        with self._lock:
            if len(self.store.vectors([a.id, b.id])) < 2:
                return False  # a source was deleted meanwhile: never bring its content back
            if len(unchanged(self.store, [a, b])) < 2:
                return False  # a source was edited meanwhile (any replica): the merge judged the old text
            key = row["metadata"]["merge_key"]  # merged_row.merge_key: the same sources, the same key
            if self.store.query(F.and_(F.eq("user_id", a.user_id), F.json_eq("metadata", "merge_key", key)), ["id"], limit=1):
                return False  # this merge was written already (another replica, a retry): the recovery finishes it
            self.fence()
            new_id: int | None = None
            try:  # the merged record and its MERGED event (store/writes.py: a failed event takes the record back)
                new_id = self.writes.insert_held([row], lambda _, i: [HistoryEvent(
                    memory_id=i, user_id=a.user_id, action=HistoryAction.MERGED, new_text=text, actor=ACTOR,
                    details={"merged_from_ids": [a.id, b.id], **details})])[0]
            except LeaseLost:
                raise
            except BaseException:
                self._abandon_merge(a.user_id, new_id, [a.id, b.id], locked=True)
                raise
        self.checkpoint("merge_inserted")
        merged = MemoryRecord.from_row({**row, "id": new_id})
        try:
            self._delete_sources(merged, [a.id, b.id])
        except LeaseLost:  # another replica holds the user now: it finishes this merge (merge_pending); never undo it
            raise
        except BaseException:
            self._abandon_merge(a.user_id, new_id, [a.id, b.id])
            raise
        self._clear_pending_flag(merged)  # a failure here leaves the flag for the next run's recovery to clear
        return True

    def _abandon_merge(self, user_id: str, new_id: int | None, source_ids: list[int], locked: bool = False) -> None:
        """A merge that failed before its sources went: remove the merged record (found by its sources
        when the insert raised after it landed) and its events, so the old state stands. When a source
        is gone already the merge stays, flagged `merge_pending`, and the next run finishes it.
        Never raises: the first error is the one to see."""
        try:
            with nullcontext() if locked else self._lock:
                if len(self.store.vectors(source_ids)) < len(source_ids):
                    return
                pending = self.store.query(F.and_(F.eq("user_id", user_id), F.json_eq("metadata", "merge_pending", True)))
                ids = {int(r["id"]) for r in pending if sorted((r.get("metadata") or {}).get("merged_from_ids") or []) == sorted(source_ids)}
                ids |= {new_id} if new_id is not None else set()
                if ids:
                    self.fence()
                    self.store.delete(F.in_("id", sorted(ids)))
                    self.store.delete_history(F.in_("memory_id", sorted(ids)))
        except Exception:
            log.warning("merge of %s failed and could not be rolled back; the next run finishes it", source_ids, exc_info=True)

    def _separate(self, a: MemoryRecord, b: MemoryRecord, sep: Any, similarity: float, reason: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The pair told apart: its rows rewritten (new texts, markers) and its events, held in the
        pass's SeparationBatch (pairs.py) and written with the others."""
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

    # ------------------------------------------------------------------ writes
    def _upsert(self, record: MemoryRecord, text: str, metadata: dict[str, Any],
                action: HistoryAction | None = None, details: dict[str, Any] | None = None) -> None:
        """Rewrite `record` in place through the Writer (its event first, when `action`); a memory deleted
        or edited since it was read is left as it is."""
        if text != record.text:
            vector = self.embedder.encode([text], role="passage")[0].tolist()
        else:
            vector = self.store.vectors([record.id]).get(record.id)
            if vector is None:
                return  # deleted meanwhile
        row = record.model_copy(update={"text": text, "metadata": metadata}).to_row(vector)
        events = [event(record, action, old_text=record.text, new_text=text, details=details or {})] if action is not None else []
        with self._lock:
            self.writes.rewrite_held([row], [record], events)
