"""The decay step (seed 004's nightly pass, seed 003's archive/forget and review): moves memories
whose score has fallen, or whose todo date has passed, to archived, forgets (deletes) those below
the forget threshold with a history event that keeps the whole row, so `restore` brings it back,
and promotes to core what scores 0.9 or more and the review judges core-worthy (today the rules'
degraded reviewer, categories.core_worthy: names, birthdays, standing preferences).
Scores themselves are never rewritten (policy.effective_score computes them), so a night with
nothing to archive writes nothing. Run by `Memory.decay`, `consolidate` and the service schedule.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..models import LIFE_KEY, Category, DecayStats, Lifecycle, HistoryAction, HistoryEvent, MemoryRecord, State
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from .categories import core_worthy
from .policy import PERMANENT, THRESHOLDS, DecayRule, Thresholds, next_state, score_of

Progress = Callable[[str, int, int], None]
_BATCH = 200


def forgotten_row(record: MemoryRecord) -> dict[str, Any]:
    """What a FORGOTTEN event keeps: everything but the vector (re-embedded on restore)."""
    return {"memory_type": record.memory_type.value, "ts": record.ts, "chat_id": record.chat_id, "who": record.who,
            "text": record.text, "hit_count": record.hit_count, "metadata": record.metadata}


def run_decay(store: MilvusStore, lock: threading.Lock, user_id: str | None, now: int,
              table: dict[Category, DecayRule], thresholds: Thresholds = THRESHOLDS,
              progress: Progress | None = None) -> DecayStats:
    """One decay pass over one user's memories (every user's when user_id is None)."""
    started = time.perf_counter()
    stats = DecayStats()
    scope = F.eq("user_id", user_id) if user_id is not None else ""
    due: list[int] = []
    for page in store.iterate(scope, ["id", "user_id", "memory_type", "ts", "text", "metadata"]):
        for row in page:
            stats.examined += 1
            rec = MemoryRecord.from_row({**row, "chat_id": "", "who": "", "hit_count": 0})
            life = Lifecycle.stored_in(rec.metadata)
            if life is None or next_state(life, now, table, thresholds) is not life.state or promotable(rec, life, now, table, thresholds):
                due.append(int(row["id"]))  # unstamped (written before lifecycle): its clock starts now
    for start in range(0, len(due), _BATCH):
        _apply(store, lock, due[start : start + _BATCH], now, table, thresholds, stats)
        if progress is not None:
            progress("decay", min(start + _BATCH, len(due)), len(due))
    stats.seconds = round(time.perf_counter() - started, 3)
    return stats


def _apply(store: MilvusStore, lock: threading.Lock, ids: list[int], now: int, table: dict[Category, DecayRule],
           thresholds: Thresholds, stats: DecayStats) -> None:
    """Re-read under the write lock (a use since the scan may have saved a memory) and move each;
    a memory written before lifecycle gets its fields, its clock starting now."""
    with lock:
        rows = store.query(F.in_("id", ids), [*MEMORY_FIELDS, "vector"], limit=len(ids))
        rewrite, forget, events = [], [], []
        for row in rows:
            rec = MemoryRecord.from_row(row)
            life = Lifecycle.stored_in(rec.metadata)
            if life is None:
                stamped = Lifecycle.of({}, rec.memory_type).model_copy(update={"last_activated": now})
                rewrite.append(_with_life(row, rec, stamped))
                stats.stamped += 1
                continue
            score = round(score_of(life, now, table), 4)
            target = next_state(life, now, table, thresholds)
            if target is life.state:
                if promotable(rec, life, now, table, thresholds):
                    stats.promoted += 1
                    rewrite.append(_with_life(row, rec, life.model_copy(update={"category": Category.CORE, "importance": score,
                                                                                "last_activated": now})))
                    events.append(HistoryEvent(memory_id=rec.id, user_id=rec.user_id, action=HistoryAction.PROMOTED,
                                               actor="reviewer:rules", at=now,
                                               details={"score": score, "from": life.category.value}))
                continue
            if target is State.FORGOTTEN:
                forget.append(rec.id)
                events.append(HistoryEvent(memory_id=rec.id, user_id=rec.user_id, action=HistoryAction.FORGOTTEN,
                                           old_text=rec.text, actor="decay", at=now,
                                           details={"score": score, "row": forgotten_row(rec)}))
                continue
            expired = score >= thresholds.archive_below
            stats.expired += int(expired)
            stats.archived += 1
            rewrite.append(_with_life(row, rec, life.model_copy(update={"state": State.ARCHIVED})))
            events.append(HistoryEvent(memory_id=rec.id, user_id=rec.user_id, action=HistoryAction.ARCHIVED,
                                       actor="decay", at=now,
                                       details={"score": score, "reason": "todo expired" if expired else "score below archive threshold"}))
        if rewrite:
            store.upsert(rewrite)
        if forget:
            store.delete(F.in_("id", forget))
        store.add_history([e.model_dump(mode="json") for e in events])
        stats.forgotten += len(forget)


def promotable(record: MemoryRecord, life: Lifecycle, now: int, table: dict[Category, DecayRule],
               thresholds: Thresholds = THRESHOLDS) -> bool:
    """Up for core (seed 003's review at the promotion threshold), decided by the degraded reviewer:
    active, not yet permanent, scoring at least review_core_at, and core_worthy by the rules."""
    return (life.state is State.ACTIVE and life.category not in PERMANENT
            and score_of(life, now, table) >= thresholds.review_core_at and core_worthy(record.text, life.category))


def _with_life(row: dict[str, Any], record: MemoryRecord, life: Lifecycle) -> dict[str, Any]:
    return {**{k: v for k, v in row.items() if k != "sparse"}, "metadata": {**record.metadata, LIFE_KEY: life.stored()}}
