"""The online flow in one call (issue 14 item 5, the KnowledgeMonitor): after a turn, the
monitor's checked plan is applied here: new memories added, corrections written in place (the old
text in history), used or boosted memories counted and reinforced, deletions made soft (the row
kept in a "forgotten" history event, so `Memory.restore` brings it back). A helper of the facade,
like online.py; the monitor itself stays pure (processors/monitor.py).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .embeddings import Embedder
from .errors import NotFound
from .lifecycle.categories import new_life
from .lifecycle.decay import forgotten_row
from .lifecycle.policy import PERMANENT, DecayRule
from .models import LIFE_KEY, Category, HistoryAction, HistoryEvent, MemoryRecord, MemoryType, ObserveResult, now_ts, ts_to_iso
from .online import record_use
from .processors.monitor import MonitorPlan
from .removal import remove_with_history
from .store import MEMORY_FIELDS, MilvusStore
from .store import filters as F
from .writes import Writer, new_row

log = logging.getLogger(__name__)
IMPORTANCE = {"high": 0.8, "medium": 0.6, "low": 0.4}  # the LLM's importance levels as scores
ACTOR = "knowledge_monitor"


def _category(name: str) -> Category | None:
    """The monitor's category, or None (guessed from the text) for an unknown one; never core or system."""
    try:
        category = Category(name)
    except ValueError:
        return None
    return None if category in PERMANENT else category


class TurnParts:
    """What the turn itself fixes of every memory it adds: who, where, when, and its source text."""

    def __init__(self, user_id: str, chat_id: str, who: str, ts: int, text: str, metadata: dict[str, Any]):
        self.user_id, self.chat_id, self.who, self.ts, self.text, self.metadata = user_id, chat_id, who, ts, text, metadata

    def row(self, text: str, category: Category | None, importance: float | None) -> dict[str, Any]:
        life = new_life(text, MemoryType.EPISODIC, now_ts(), self.ts, category, importance).stored()
        meta = {"context": "", "thing": text, "time": ts_to_iso(self.ts), "chatid": self.chat_id, "who": self.who,
                **self.metadata, "source_text": self.text, LIFE_KEY: life}
        return new_row(self.user_id, MemoryType.EPISODIC, self.ts, self.chat_id, self.who, text, meta)


def apply_plan(store: MilvusStore, embedder: Embedder, lock: threading.Lock, writes: Writer, plan: MonitorPlan,
               turn: TurnParts, table: dict[Category, DecayRule]) -> ObserveResult:
    """Apply a checked plan; a memory deleted or promoted to core meanwhile is skipped and said so."""
    out = ObserveResult(refused=list(plan.refused), reason=plan.reason)
    rows = [turn.row(a.text, _category(a.category), IMPORTANCE.get(a.importance)) for a in plan.adds]
    if rows:
        out.added = writes.insert(rows, actor=ACTOR)
    current: dict[int, MemoryRecord] = {}
    for mid in {*plan.updates, *plan.deletes, *plan.used, *plan.boosted}:
        found = store.query(F.and_(F.eq("id", mid), F.eq("user_id", turn.user_id)), MEMORY_FIELDS, limit=1)
        if found:
            current[mid] = MemoryRecord.from_row(found[0])
        else:
            out.refused.append(f"memory {mid} was deleted meanwhile; nothing done to it")
    for mid, text in plan.updates.items():
        old = current.get(mid)
        if old is None or old.life.category in PERMANENT:
            continue
        meta = {**old.metadata, "updated_at": now_ts()}
        if old.memory_type is MemoryType.EPISODIC and "thing" in meta:
            meta["thing"] = text
        current[mid] = writes.rewrite(old, text, meta, HistoryAction.UPDATED, actor=ACTOR, details={"by": ACTOR})
        out.updated.append(mid)
    for mid, reason in plan.deletes.items():
        if mid in current and _soft_delete(store, lock, current[mid], reason, out):
            out.deleted.append(mid)
    for mid in dict.fromkeys([*plan.used, *plan.boosted]):
        if mid not in current or mid in out.deleted:
            continue
        try:
            record_use(store, embedder, lock, current[mid], None, None, table)
        except NotFound:
            out.refused.append(f"memory {mid} was deleted meanwhile; its use was not counted")
            continue
        if mid in plan.used:
            out.used.append(mid)
        if mid in plan.boosted:
            out.boosted.append(mid)
    return out


def _soft_delete(store: MilvusStore, lock: threading.Lock, record: MemoryRecord, reason: str, out: ObserveResult) -> bool:
    """Remove the row, keeping all of it in a "forgotten" event (restorable); never a core memory."""
    scope = F.and_(F.eq("id", record.id), F.eq("user_id", record.user_id))
    with lock:
        rows = store.query(scope, MEMORY_FIELDS, limit=1)
        if not rows:
            out.refused.append(f"memory {record.id} was deleted meanwhile")
            return False
        rec = MemoryRecord.from_row(rows[0])
        if rec.life.category in PERMANENT:
            out.refused.append(f"memory {record.id} is {rec.life.category.value} now; not deleted")
            return False
        event = HistoryEvent(memory_id=rec.id, user_id=rec.user_id, action=HistoryAction.FORGOTTEN, old_text=rec.text,
                             actor=ACTOR, details={"by": ACTOR, "reason": reason, "row": forgotten_row(rec)})
        remove_with_history(store, [event.model_dump(mode="json")], scope, [rec.id])  # the event first (removal.py)
    return True
