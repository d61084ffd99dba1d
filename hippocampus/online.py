"""The online flow's use step (seed 002's first flowchart, after the answer): hit_count++ and
reconsolidation of a memory the answer actually used. A helper of the facade; the
Reconsolidator itself stays pure (its fact guard included: the history event records the
guard's facts_path and facts_missing).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .embeddings import Embedder
from .errors import LLMError, NotFound
from .lifecycle.policy import PRESETS, DecayRule, use
from .models import LIFE_KEY, Category, HistoryAction, HistoryEvent, MemoryRecord, MemoryType, now_ts, ts_to_iso
from .processors.reconsolidator import EpisodicReconsolidator, apply_reconsolidation
from .processors.results import ReconsolidationResult
from .store import MEMORY_FIELDS, MilvusStore
from .store import filters as F

log = logging.getLogger(__name__)


def record_use(
    store: MilvusStore,
    embedder: Embedder,
    lock: threading.Lock,
    record: MemoryRecord,
    reconsolidator: EpisodicReconsolidator | None,
    context: str | None,
    decay_table: dict[Category, DecayRule] = PRESETS["default"],
) -> MemoryRecord:
    """hit_count + 1 (always), the score reinforced when the use counts (lifecycle/policy.use:
    2-hour cooldown, daily cap), and the reconsolidated text when the model says the conversation
    changed an episodic memory. The model is asked outside the write lock; the row is re-read
    under it, so a concurrent mark_used never loses an increment."""
    now = now_ts()
    result: ReconsolidationResult | None = None
    if reconsolidator is not None and context and record.memory_type is MemoryType.EPISODIC:
        try:
            result = reconsolidator.reconsolidate(record, context, now_iso=ts_to_iso(now))
        except LLMError as exc:
            log.warning("reconsolidation of memory %s skipped, memory unchanged: %s", record.id, exc)
    new_text, new_meta = record.text, dict(record.metadata)
    if result is not None and result.changed:
        new_text, new_meta = apply_reconsolidation(record, result, ts_to_iso(now), context or "")
    vector = embedder.encode([new_text], role="passage")[0].tolist() if new_text != record.text else None
    scope = F.and_(F.eq("id", record.id), F.eq("user_id", record.user_id))
    with lock:
        rows = store.query(scope, [*MEMORY_FIELDS, "vector"], limit=1)
        if not rows:
            raise NotFound(f"memory {record.id} was deleted meanwhile")
        current = MemoryRecord.from_row(rows[0])
        if current.text != record.text or current.metadata.get("updated_at") != record.metadata.get("updated_at"):
            # changed since we read it (an update, a merge): count the use, do not overwrite the change
            if new_text != record.text or new_meta != record.metadata:
                log.info("memory %s changed during reconsolidation; only its hit is recorded", record.id)
            new_text, new_meta, vector = current.text, dict(current.metadata), None
        reconsolidated = new_text != current.text or new_meta != current.metadata
        if reconsolidated:
            new_meta["updated_at"] = now
        life = use(current.life, now, decay_table)
        new_meta[LIFE_KEY] = life.stored()
        row: dict[str, Any] = {**{k: v for k, v in rows[0].items() if k not in ("sparse",)}, "text": new_text,
                               "metadata": new_meta, "hit_count": current.hit_count + 1}
        if vector is not None:
            row["vector"] = vector
        store.upsert([row])
        events = [HistoryEvent(memory_id=record.id, user_id=record.user_id, action=HistoryAction.HIT, actor="chat",
                               details={"hit_count": current.hit_count + 1, "importance": round(life.importance, 4),
                                        "counted": life != current.life})]
        if life.state is not current.life.state:
            events.append(HistoryEvent(memory_id=record.id, user_id=record.user_id, action=HistoryAction.REACTIVATED,
                                       actor="chat", details={"from": current.life.state.value, "importance": life.importance}))
        if reconsolidated:
            desc = (new_meta.get("updates") or [{}])[-1].get("desc", "")
            events.append(HistoryEvent(memory_id=record.id, user_id=record.user_id, action=HistoryAction.RECONSOLIDATED,
                                       old_text=current.text, new_text=new_text, actor="reconsolidator",
                                       details={"desc": desc, **(result.facts_details() if result is not None else {})}))
        store.add_history([e.model_dump(mode="json") for e in events])
    return MemoryRecord.from_row(row)
