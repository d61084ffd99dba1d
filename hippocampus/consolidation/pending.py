"""Pending decisions, the consolidation job's first judging phase (and `Memory.decide_pending` alone):
raw turns kept with `pending_decision` (`write_decision: deferred`, or the LLM was unavailable when they
were added) go to the WriteDecider again. Kept, a turn is rewritten as the online path stores a positive
decision (the decided `thing` as text, the raw turn beside it); not kept, it is removed with its DELETED
event first. What the turn says about the memory itself (a forget request, a correction) is honoured
as add(infer=True) honours it (memory/forget.py's Honour, handed in by name)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..embeddings import Embedder
from ..errors import LLMError
from ..models import ConsolidationStats, HistoryAction, MemoryRecord, Progress, now_ts
from ..processors.write_decider import EpisodicWriteDecider
from ..store import MilvusStore
from ..store import filters as F
from ..store.removal import remove_with_history
from ..store.writes import Writer
from .rows import event, fits, rewrite

log = logging.getLogger(__name__)


class PendingDecisions:
    """The pending phase of one consolidation run: what it needs is its constructor (the job hands over its
    store, embedder, Writer, write lock, WriteDecider, Honour (or None: nothing honoured), stats and lease check)."""

    def __init__(self, store: MilvusStore, embedder: Embedder, writes: Writer, lock: AbstractContextManager[Any],
                 decider: EpisodicWriteDecider, honour: Any, stats: ConsolidationStats, fence: Callable[[], None]):
        self.store, self.embedder, self.writes, self._lock = store, embedder, writes, lock
        self.decider, self.honour, self.stats, self.fence = decider, honour, stats, fence

    def run(self, scope: str, notify: Progress) -> None:
        """Ask the WriteDecider again about each pending turn in scope. A forget request in the turn is honoured
        and never stored (only the rest is decided); a correction supersedes what it corrects (memory/forget.py)."""
        rows = self.store.query(F.and_(scope, F.json_eq("metadata", "pending_decision", True)))
        for n, row in enumerate(rows, 1):
            notify("pending", n, len(rows))
            record = MemoryRecord.from_row(row)
            said = str(record.metadata.get("source_text") or record.text)
            asks, rest = self.honour.split(said) if self.honour is not None else ([], said)
            forgot = self.honour.forget(record.user_id, asks, skip={record.id}) if asks else []
            if asks and not rest:  # the rules are certain: a forget request alone is never stored
                self.stats.pending_decided += 1
                self._drop(record, f"a forget request (not stored); forgot memories {forgot}")
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
                self._drop(record, "write decider: not worth remembering")
                continue
            # as the online path stores a positive decision: the decided `thing` as text, the raw turn beside it
            text = (decision.thing or "").strip() or record.text
            meta = {k: v for k, v in record.metadata.items() if k != "pending_decision"}
            meta.update({"context": decision.context or meta.get("context", ""), "thing": text, "source_text": record.text,
                         "updated_at": now_ts()})
            rewrite(self.store, self.embedder, self.writes, self._lock, record, text if fits(text) else record.text, meta,
                    action=HistoryAction.UPDATED, details={"reason": "pending decision: kept"})
            if self.honour is not None:
                self.honour.correct(record.user_id, said, [record.id], record.ts)

    def _drop(self, record: MemoryRecord, reason: str) -> None:
        """A pending turn not kept: its DELETED event first, then the row (it came from this user's scope)."""
        with self._lock:
            dropped = event(record, HistoryAction.DELETED, old_text=record.text, details={"reason": reason})
            self.fence()
            remove_with_history(self.store, [dropped.model_dump(mode="json")], F.eq("id", record.id), [record.id])
