"""Contradictions, newest wins, nothing erased blindly: a consolidation
phase that shows each new semantic fact, with the user's older facts nearest to it, to the
ContradictionJudge; what the judge names gets `valid_to` and `superseded_by`, its score halved,
a "superseded" history event, and leaves the prompt block and default search results. A fact is
judged once (metadata.contradictions_checked); a failed model leaves it for the next run.
Each fact's writes are fenced (`fence`: the consolidation run's lease check, store/leases.py): a
replica that lost its lease marks nothing, and the next holder judges the fact again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import LLMError
from ..models import LIFE_KEY, Category, HistoryAction, HistoryEvent, MemoryRecord, MemoryType, State
from ..models.base import Model
from ..processors.contradiction import MAX_OLDER, ContradictionJudge
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from .policy import DecayRule, superseded

log = logging.getLogger(__name__)
CHECKED = "contradictions_checked"


class SupersedeStats(Model):
    checked: int = 0
    superseded: int = 0
    llm_calls: int = 0
    errors: int = 0


def candidates(new: MemoryRecord, vector: np.ndarray, others: list[tuple[MemoryRecord, np.ndarray]]) -> list[MemoryRecord]:
    """The older facts nearest to `new`, best first: active, not superseded, written for an earlier
    (or the same) event time. Pure."""
    older = [(r, v) for r, v in others if r.id != new.id and (r.ts, r.id) < (new.ts, new.id)
             and r.life.state is State.ACTIVE and r.life.superseded_by is None]
    older.sort(key=lambda rv: -float(np.dot(rv[1], vector)))
    return [r for r, _ in older[:MAX_OLDER]]


def run_supersede(store: MilvusStore, lock: threading.Lock, judge: Callable[[], ContradictionJudge], user_id: str | None,
                  now: int, table: dict[Category, DecayRule], fence: Callable[[], None] | None = None) -> SupersedeStats:
    """Judge every unchecked semantic fact of one user (every user's when user_id is None)."""
    stats = SupersedeStats()
    facts = F.eq("memory_type", MemoryType.SEMANTIC.value)
    users = sorted({row["user_id"] for page in store.iterate(F.and_(F.eq("user_id", user_id) if user_id is not None else None, facts),
                                                              ["id", "user_id", "metadata"])
                    for row in page if not (row.get("metadata") or {}).get(CHECKED)})
    for user in users:  # one user's facts (with vectors) in memory at a time
        rows = [row for page in store.iterate(F.and_(F.eq("user_id", user), facts), [*MEMORY_FIELDS, "vector"]) for row in page]
        _one_user(store, lock, judge, rows, now, table, stats, fence or (lambda: None))
    return stats


def _one_user(store: MilvusStore, lock: threading.Lock, judge: Callable[[], ContradictionJudge], rows: list[dict[str, Any]],
              now: int, table: dict[Category, DecayRule], stats: SupersedeStats, fence: Callable[[], None]) -> None:
    facts = {int(r["id"]): (MemoryRecord.from_row(r), _unit(r["vector"]), r) for r in rows}
    todo = sorted((rec for rec, _, _ in facts.values() if not rec.metadata.get(CHECKED)), key=lambda r: (r.ts, r.id))
    for new in todo:
        others = [(rec, vec) for rec, vec, _ in facts.values()]
        older = candidates(new, facts[new.id][1], others)
        ids: list[int] = []
        reason = ""
        if older:
            try:
                stats.llm_calls += 1
                ids, reason = judge().judge(new, older)
            except LLMError as exc:
                stats.errors += 1
                log.warning("contradiction check of fact %s failed, left for the next run: %s", new.id, exc)
                continue
        writes, events = [], []
        for old_id in ids:
            old, vec, row = facts[old_id]
            life = superseded(old.life, new.id, new.ts, now, table)
            meta = {**old.metadata, LIFE_KEY: life.stored()}
            writes.append(_row(row, meta))
            events.append(HistoryEvent(memory_id=old.id, user_id=old.user_id, action=HistoryAction.SUPERSEDED, old_text=old.text,
                                       actor="contradiction_judge", at=now, details={"superseded_by": new.id, "new_text": new.text,
                                                                                     "reason": reason}).model_dump(mode="json"))
            facts[old_id] = (MemoryRecord.from_row({**row, "metadata": meta}), vec, {**row, "metadata": meta})
        row = facts[new.id][2]
        meta = {**new.metadata, CHECKED: True}
        writes.append(_row(row, meta))
        facts[new.id] = (MemoryRecord.from_row({**row, "metadata": meta}), facts[new.id][1], {**row, "metadata": meta})
        with lock:
            fence()  # LeaseLost: another replica holds this user now; nothing of this fact is written
            store.upsert(writes)
            store.add_history(events)
        stats.checked += 1
        stats.superseded += len(ids)


def _row(row: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """A stored row (with its vector) with new metadata, encoded by MemoryRecord.to_row."""
    return MemoryRecord.from_row(row).model_copy(update={"metadata": metadata}).to_row(row["vector"])


def _unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n else v
