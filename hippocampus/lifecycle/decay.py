"""The decay step (a regular pass over every memory: archive, forget and review): moves memories
whose score has fallen, or whose todo date has passed, to archived, forgets (deletes) those below
the forget threshold with a history event that keeps the whole row, so `restore` brings it back,
and asks the MemoryReviewer about what scores 0.9 or more (promote to core, or keep) and, with a
real model, about what is about to be archived (keep at 0.5, delete, or promote). The offline
rules review only the first: names, birthdays and standing preferences are promoted.
Scores themselves are never rewritten (policy.effective_score computes them), so a night with
nothing to archive writes nothing. Run by `Memory.decay`, `consolidate` and the service schedule.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import LLMError
from ..models import (
    LIFE_KEY,
    Category,
    DecayStats,
    HistoryAction,
    HistoryEvent,
    Lifecycle,
    MemoryRecord,
    Progress,
    State,
)
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.removal import remove_with_history
from .policy import PERMANENT, THRESHOLDS, DecayRule, Thresholds, next_state, score_of

log = logging.getLogger(__name__)
_BATCH = 200


def mark_full_run(store: MilvusStore, now: int, stats: DecayStats) -> None:
    """Remember in the store itself when a pass over every user last ran (the service decays at
    start when that is over a day ago); only the latest mark is kept."""
    mark = HistoryEvent(memory_id=0, user_id="", action=HistoryAction.DECAY_RUN, actor="decay", at=now,
                        details=stats.model_dump(exclude={"seconds"}))
    store.add_history([mark.model_dump(mode="json")])
    store.delete_history(F.and_(F.eq("action", HistoryAction.DECAY_RUN.value), F.eq("user_id", ""), f"at < {int(now)}"))


def last_full_run(store: MilvusStore) -> int | None:
    """When the last pass over every user ran (epoch seconds), or None when none has."""
    marks = store.history(F.and_(F.eq("action", HistoryAction.DECAY_RUN.value), F.eq("user_id", "")))
    return max((int(m["at"]) for m in marks), default=None)


def forgotten_row(record: MemoryRecord) -> dict[str, Any]:
    """What a FORGOTTEN event keeps: everything but the vector (re-embedded on restore)."""
    return {k: v for k, v in record.to_row().items() if k not in ("id", "user_id")}


Review = Callable[[MemoryRecord, str], tuple[str, str]]  # (record, "high" | "low") -> (action, reason)


def run_decay(store: MilvusStore, lock: threading.Lock, user_id: str | None, now: int,
              table: dict[Category, DecayRule], thresholds: Thresholds = THRESHOLDS,
              progress: Progress | None = None, review: Review | None = None, review_low: bool = False,
              fence: Callable[[], None] | None = None) -> DecayStats:
    """One decay pass over one user's memories (every user's when user_id is None). `review` judges
    a memory that reached 0.9 ("high": promote or keep) and, with `review_low`, one about to be
    archived ("low": promote, keep at 0.5, or delete); it is asked outside the write lock. `fence`
    (a lease's check, store/leases.py) runs before each batch of writes: a replica that lost its
    lease raises there and writes nothing more."""
    started = time.perf_counter()
    stats = DecayStats()
    scope = F.eq("user_id", user_id) if user_id is not None else ""
    due: list[int] = []
    verdicts: dict[int, tuple[str, str, str]] = {}
    for page in store.iterate(scope, ["id", "user_id", "memory_type", "ts", "text", "metadata"]):
        for row in page:
            stats.examined += 1
            rec = MemoryRecord.from_row({**row, "chat_id": "", "who": "", "hit_count": 0})
            life = Lifecycle.stored_in(rec.metadata)
            trigger = review_trigger(life, now, table, thresholds, review_low) if life is not None else None
            if trigger and review is not None:
                try:
                    action, reason = review(rec, trigger)
                    verdicts[rec.id] = (trigger, action, reason)
                    stats.reviewed += 1
                except LLMError as exc:
                    log.warning("review of memory %s failed; the rules apply: %s", rec.id, exc)
            if life is None or next_state(life, now, table, thresholds) is not life.state or rec.id in verdicts:
                due.append(int(row["id"]))  # unstamped (written before lifecycle): its clock starts now
    for start in range(0, len(due), _BATCH):
        if fence is not None:
            fence()
        _apply(store, lock, due[start : start + _BATCH], now, table, thresholds, stats, verdicts)
        if progress is not None:
            progress("decay", min(start + _BATCH, len(due)), len(due))
    stats.seconds = round(time.perf_counter() - started, 3)
    return stats


def review_trigger(life: Lifecycle, now: int, table: dict[Category, DecayRule], thresholds: Thresholds = THRESHOLDS,
                   low: bool = False) -> str | None:
    """"high" when an active, not yet permanent memory scores review_core_at or more and was used
    since its last review; "low" (when asked) when its score is about to archive it; else None. Pure."""
    if life.state is not State.ACTIVE or life.category in PERMANENT:
        return None
    score = score_of(life, now, table)
    if score >= thresholds.review_core_at and (life.reviewed_at is None or life.last_activated > life.reviewed_at):
        return "high"
    if low and thresholds.forget_below <= score < thresholds.archive_below:
        return "low"
    return None


def _apply(store: MilvusStore, lock: threading.Lock, ids: list[int], now: int, table: dict[Category, DecayRule],
           thresholds: Thresholds, stats: DecayStats, verdicts: dict[int, tuple[str, str, str]]) -> None:
    """Re-read under the write lock (a use since the scan may have saved a memory) and move each;
    a memory written before lifecycle gets its fields, its clock starting now."""
    with lock:
        rows = store.by_ids(ids, [*MEMORY_FIELDS, "vector"])
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
            verdict = verdicts.get(rec.id)
            past = life.expires_at is not None and now > life.expires_at  # an expiry passed: archived, not reviewed
            if verdict is not None and not past and review_trigger(life, now, table, thresholds, verdict[0] == "low") == verdict[0]:
                trigger, action, reason = verdict
                details = {"score": score, "trigger": trigger, "action": action, "reason": reason, "from": life.category.value}
                if action == "promote":
                    stats.promoted += 1
                    life = life.model_copy(update={"category": Category.CORE, "importance": score, "last_activated": now,
                                                   "reviewed_at": now})
                    rewrite.append(_with_life(row, rec, life))
                    events.append(_event(rec, HistoryAction.PROMOTED, now, details))
                    continue
                if action == "delete" and trigger == "low":
                    forget.append(rec.id)
                    events.append(_event(rec, HistoryAction.FORGOTTEN, now, {**details, "row": forgotten_row(rec)}, rec.text))
                    continue
                # keep: at the low trigger the score goes back to 0.5 (the reviewer's KEEP)
                update: dict[str, Any] = {"reviewed_at": now}
                if trigger == "low":
                    update.update(importance=0.5, last_activated=now)
                life = life.model_copy(update=update)
                rewrite.append(_with_life(row, rec, life))
                events.append(_event(rec, HistoryAction.REVIEWED, now, details))
                continue
            target = next_state(life, now, table, thresholds)
            if target is life.state:
                continue
            if target is State.FORGOTTEN:
                forget.append(rec.id)
                events.append(_event(rec, HistoryAction.FORGOTTEN, now, {"score": score, "row": forgotten_row(rec)}, rec.text))
                continue
            expired = score >= thresholds.archive_below
            stats.expired += int(expired)
            stats.archived += 1
            rewrite.append(_with_life(row, rec, life.model_copy(update={"state": State.ARCHIVED})))
            events.append(_event(rec, HistoryAction.ARCHIVED, now,
                                 {"score": score, "reason": "todo expired" if expired else "score below archive threshold"}))
        # the forgotten rows' events first, then the rows (removal.py): never a row gone without its event
        gone = [e.model_dump(mode="json") for e in events if e.action is HistoryAction.FORGOTTEN]
        if forget:
            remove_with_history(store, gone, F.in_("id", forget), forget)
        stats.forgotten += len(forget)
        if rewrite:
            store.upsert(rewrite)
        store.add_history([e.model_dump(mode="json") for e in events if e.action is not HistoryAction.FORGOTTEN])


def _event(record: MemoryRecord, action: HistoryAction, at: int, details: dict[str, Any], old_text: str | None = None) -> HistoryEvent:
    actor = "reviewer" if "trigger" in details else "decay"
    return HistoryEvent(memory_id=record.id, user_id=record.user_id, action=action, old_text=old_text, actor=actor, at=at,
                        details=details)


def _with_life(row: dict[str, Any], record: MemoryRecord, life: Lifecycle) -> dict[str, Any]:
    return record.model_copy(update={"metadata": {**record.metadata, LIFE_KEY: life.stored()}}).to_row(row["vector"])
