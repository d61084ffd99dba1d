"""The online flow's use step (after the answer): hit_count++ and
reconsolidation of a memory the answer actually used. A helper of the facade; the
Reconsolidator itself stays pure (its fact guard included: the history event records the
guard's facts_path and facts_missing).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..embeddings import Embedder
from ..errors import LLMError, NotFound
from ..lifecycle.policy import PRESETS, DecayRule, decay_table, use
from ..lifecycle.rows import new_row
from ..lifecycle.when import user_zone
from ..models import (
    LIFE_KEY,
    AddResult,
    Category,
    HistoryAction,
    HistoryEvent,
    MemoryRecord,
    MemoryType,
    now_ts,
    ts_to_iso,
)
from ..processors.reconsolidator import EpisodicReconsolidator, apply_reconsolidation
from ..processors.results import ReconsolidationResult
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.writes import Writer, revised_row
from ..text import slots, user_lines

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
        row = revised_row(rows[0], text=new_text, metadata=new_meta, hit_count=current.hit_count + 1,
                          **({"vector": vector} if vector is not None else {}))
        if store.upsert([row]):  # removed by another process during the write (a shared server)
            raise NotFound(f"memory {record.id} was deleted meanwhile")
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


def add_inferred(writes: Writer, make_decider: Callable[[], Any], config: Any, user_id: str, chat_id: str, who: str,
                 metadata: dict[str, Any], ts: int, text: str, turns: list[dict[str, str]],
                 forget: Callable[[list[str]], list[int]] | None = None,
                 correct: Callable[[str, list[int]], list[int]] | None = None) -> AddResult:
    """add(infer=True)'s write step (write_decider.decide_turn): the rules gate, then one WriteDecider
    call; the turn is kept raw, pending, when the decision is deferred or the LLM fails. A memory this
    user already holds word for word (a "remember ..." said twice) is not stored again: its use is
    counted instead (hit + reinforcement) and its id returned with stored False.

    A forget request in the turn ("Please forget that I like jazz") is honoured as observe honours it:
    `forget` (memory/forget.py) soft-deletes the memories it names, and the request itself is never
    stored; what else the turn says is decided as usual. A correction ("I don't live in Paris anymore, I
    moved to Rome") supersedes what it corrects at once (`correct`). The turn's time is read in the user's zone
    (lifecycle/when.user_zone) and resolved once (lifecycle/when.py)."""
    from ..consolidation.rules import SAME_CHAT_WINDOW_S as W  # the same words said again: one chat, 30 minutes
    from ..consolidation.rules import said_again
    from ..processors.gate import gate, refusals, refused_turn
    from ..processors.results import WriteDecision
    from ..processors.write_decider import decide_turn, episodic_metadata, gate_enabled, pending_metadata
    from ..store.agents import same_agent
    from ..text import has_cjk
    from .forget import forget_split, is_correction

    tz = user_zone(config, user_id)
    said = user_lines(turns) if turns else text
    asks, rest = forget_split(said)
    forgotten = forget(asks) if asks and forget is not None else []
    note = f"; forgot memories {forgotten} (restorable from history)" if forgotten else ""
    now_iso = datetime.fromtimestamp(int(ts), tz).isoformat()
    if asks:
        if not rest:  # the rules are certain: no model call, the gate's reason where the gate is on
            gated = gate(turns, now_iso) if gate_enabled(config) else None
            why = gated.reason if gated is not None else "rules: forget request (not stored)"
            return AddResult(stored=False, reason=why + (note or "; no memory it names was found"))
        turns, text = [{"role": "user", "content": rest}], rest
    declared = getattr(config, "categories", ())
    refused = refused_turn(turns or [{"role": "user", "content": text}], declared)  # the project's instructions
    if refused:
        return AddResult(stored=False, refused=refused, reason=refused[0] + note)
    try:
        decision = decide_turn(make_decider, config, chat_id, turns, now_iso)
        why = "deferred: kept raw; decide_pending or consolidation decides it later"
    except LLMError as exc:
        log.warning("write decision failed, keeping the turn raw for consolidation: %s", exc)
        decision, why = None, f"LLM failed, kept raw for a later decision: {exc}"

    def corrections(ids: list[int]) -> str:
        done = correct(said, ids) if correct is not None else []
        return f"; superseded memories {done} (the user corrected them)" if done else ""

    if decision is None:
        meta = pending_metadata(text, turns, ts_to_iso(ts), chat_id, who, metadata)
        ids = writes.insert([new_row(user_id, MemoryType.EPISODIC, ts, chat_id, who, text, meta, said_ts=ts, tz=tz,
                                     declared=declared)], actor="api")
        return AddResult(ids=ids, stored=True, pending_decision=True, reason=why + note + corrections(ids))
    if not decision.write_episodic and is_correction(said):  # the new state is stored with the old one superseded
        decision = WriteDecision(write_episodic=True, thing=text, context="更正" if has_cjk(text) else "a correction",
                                 time=decision.time, reason=f"a correction is always kept ({decision.reason or 'not worth remembering'})")
    if not decision.write_episodic:
        return AddResult(stored=False, reason=(decision.reason or "not worth remembering") + note)
    event_ts, meta = episodic_metadata(decision, ts, chat_id, who, {**metadata, "source_text": text})
    thing = meta["thing"] or text
    meta["thing"] = thing
    if decision.statements:  # a model's slots, in the rules' schema (text/slots.py); new_row reads the rules' otherwise
        meta[slots.KEY] = slots.stored(slots.merged(slots.from_model(decision.statements), thing))
    refused = refusals(f"{thing}\n{meta.get('context', '')}", declared)  # what a model wrote is held to them too
    if refused:
        return AddResult(stored=False, refused=refused, reason=refused[0] + note)
    same = F.and_(F.eq("user_id", user_id), F.eq("memory_type", MemoryType.EPISODIC.value), F.eq("text", thing))
    twin = [r for r in writes.store.query(F.and_(same, F.eq("chat_id", chat_id), F.cmp("ts", ">=", event_ts - W), F.cmp("ts", "<=", event_ts + W)), MEMORY_FIELDS, limit=16) if said_again(MemoryRecord.from_row(r), thing, chat_id, who, event_ts, meta["time"])
            and same_agent(r.get("metadata"), meta)]  # the same words from another agent are that agent's own (store/agents.py)
    if twin:
        record = MemoryRecord.from_row(twin[0])
        try:
            record_use(writes.store, writes.embedder, writes.lock, record, None, None, decay_table(config.decay_preset, config.categories))
            return AddResult(ids=[record.id], stored=False, reason=f"already remembered as memory {record.id}; its use was counted")
        except NotFound:
            pass  # deleted meanwhile: store it anew
    ids = writes.insert([new_row(user_id, MemoryType.EPISODIC, event_ts, chat_id, who, thing, meta, said_ts=ts, tz=tz,
                                 declared=declared)],
                        actor="write_decider")
    return AddResult(ids=ids, stored=True, reason=decision.reason + note + corrections(ids))
