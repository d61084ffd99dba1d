"""The online flow in one call (issue 14 item 5, the KnowledgeMonitor): after a turn, the
monitor's checked plan is applied here: new memories added, corrections written in place (the old
text in history), used or boosted memories counted and reinforced, deletions made soft (the row
kept in a "forgotten" history event, so `Memory.restore` brings it back). A helper of the facade,
like online.py; the monitor itself stays pure (processors/monitor.py).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from .. import text as T
from .. import validation as V
from ..context import MemoryContext
from ..contract.requests import ObserveRequest
from ..embeddings import Embedder
from ..errors import InvalidInput, NotFound
from ..lifecycle.categories import model_category, new_life
from ..lifecycle.policy import PERMANENT, DecayRule
from ..lifecycle.rows import new_row
from ..lifecycle.when import user_zone
from ..models import (
    LIFE_KEY,
    AnyCategory,
    Category,
    CategorySpec,
    HistoryAction,
    MemoryRecord,
    MemoryType,
    ObserveResult,
    carried,
    now_ts,
    ts_to_iso,
)
from ..processors.gate import refusals
from ..processors.monitor import MonitorPlan
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.writes import Writer
from .forget import ACTOR, _soft_delete, forget_asks, forget_named, forget_split, supersede_corrected
from .online import record_use

log = logging.getLogger(__name__)
IMPORTANCE = {"high": 0.8, "medium": 0.6, "low": 0.4}  # the LLM's importance levels as scores


def _category(name: str, declared: Sequence[Any] = ()) -> AnyCategory | None:
    """The monitor's category: a built-in or a project's declared one, or None (guessed from the text) for an
    unknown one, so a model never invents a category; never core or system (lifecycle/categories.py)."""
    return model_category(name, declared)


class TurnParts:
    """What the turn itself fixes of every memory it adds: who, where, when, and its source text."""

    def __init__(self, user_id: str, chat_id: str, who: str, ts: int, text: str, metadata: dict[str, Any],
                 tz: tzinfo | None = None, declared: Sequence[CategorySpec] = ()):
        self.user_id, self.chat_id, self.who, self.ts, self.text, self.metadata = user_id, chat_id, who, ts, text, metadata
        self.tz, self.declared = tz, tuple(declared)  # the project's categories (MemoryConfig.categories)

    def row(self, text: str, category: AnyCategory | None, importance: float | None) -> dict[str, Any]:
        """The one rule (lifecycle/when.py): importance read from the turn as said (a model's level kept, an
        explicit "remember" at least 0.8), the named day resolved from when it was said."""
        life = new_life(text, MemoryType.EPISODIC, now_ts(), self.ts, category, importance, said=self.text, tz=self.tz).stored()
        meta = {"context": "", "thing": text, "time": ts_to_iso(self.ts), "chatid": self.chat_id, "who": self.who,
                **self.metadata, "source_text": self.text, LIFE_KEY: life}
        return new_row(self.user_id, MemoryType.EPISODIC, self.ts, self.chat_id, self.who, text, meta, said_ts=self.ts, tz=self.tz,
                       declared=self.declared)


def apply_plan(store: MilvusStore, embedder: Embedder, lock: threading.Lock, writes: Writer, plan: MonitorPlan,
               turn: TurnParts, table: dict[Category, DecayRule]) -> ObserveResult:
    """Apply a checked plan; a memory deleted or promoted to core meanwhile is skipped and said so."""
    out = ObserveResult(refused=list(plan.refused), reason=plan.reason)
    adds = [a for a in plan.adds if not refusals(a.text, turn.declared)]  # the project's instructions
    out.refused += [f"add {a.text!r}: {why}" for a in plan.adds if a not in adds for why in refusals(a.text, turn.declared)]
    rows = [turn.row(a.text, _category(a.category, turn.declared), IMPORTANCE.get(a.importance)) for a in adds]
    if rows:
        out.added = writes.insert(rows, actor=ACTOR)
    current: dict[int, MemoryRecord] = {}
    for mid in {*plan.updates, *plan.deletes, *plan.used, *plan.boosted}:
        found = store.by_ids([mid], MEMORY_FIELDS, where=F.eq("user_id", turn.user_id))
        if found:
            current[mid] = MemoryRecord.from_row(found[0])
        else:
            out.refused.append(f"memory {mid} was deleted meanwhile; nothing done to it")
    for mid, text in plan.updates.items():
        old = current.get(mid)
        if old is None or old.life.category in PERMANENT:
            continue
        if refusals(text, turn.declared):
            out.refused += [f"update of memory {mid}: {why}" for why in refusals(text, turn.declared)]
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


class ChatHookService:
    """The chat hook's after-turn verbs over a MemoryContext: mark_used (a use counted, reinforced,
    reconsolidated) and observe (the KnowledgeMonitor's plan applied)."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def mark_used(self, memory_ids: int | Sequence[int], user_id: str, context: str | None = None) -> list[MemoryRecord]:
        """The chat hook reports which recalled memories the answer actually used (a memory that was only
        retrieved does not count as used). Memory.mark_used documents the arguments and errors."""
        from ..lifecycle.policy import decay_table
        from ..processors.reconsolidator import EpisodicReconsolidator

        user_id = V.check_id("user_id", user_id)
        ids = list(dict.fromkeys(V.check_memory_id(i) for i in ([memory_ids] if isinstance(memory_ids, (int, str)) else memory_ids)))
        context = V.check_text(context, "context") if context is not None else None
        if not ids:
            return []
        rows = self.ctx.store.by_ids(ids, where=F.eq("user_id", user_id))
        missing = sorted(set(ids) - {int(r["id"]) for r in rows})
        if missing:
            raise NotFound(f"memories {missing} not found for this user; nothing was changed")
        records = [MemoryRecord.from_row(r) for r in rows]
        reconsolidator = self.ctx.processor(EpisodicReconsolidator) if context else None
        table = decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        return [record_use(self.ctx.store, self.ctx.embedder, self.ctx.write_lock, rec, reconsolidator, context, table) for rec in records]

    def observe(self, req: ObserveRequest) -> ObserveResult:
        """The chat hook's after-turn call in one LLM call (the KnowledgeMonitor), in place of add(infer=True),
        mark_used and reconsolidation. ObserveRequest (contract/requests.py) documents the fields and errors."""
        from ..errors import LLMError
        from ..lifecycle.policy import decay_table
        from ..processors.gate import gate, refused_turn
        from ..processors.monitor import KnowledgeMonitor, MonitorPlan
        from ..processors.results import MonitorAdd
        from ..processors.write_decider import gate_enabled, pending_metadata

        messages, shown, metadata = req.messages, req.shown, req.metadata
        user_id = V.check_id("user_id", req.user_id)
        chat_id = V.check_id("chat_id", req.chat_id)
        who = V.check_id("who", req.who if req.who is not None else user_id, V.WHO_MAX)
        from ..store import agents as A

        agent_id, run_id = A.check_ids(req.agent_id, req.run_id)
        turn_meta = A.stamp(V.check_caller_metadata(metadata) | carried(req), agent_id, run_id)  # what it adds is the agent's (store/agents.py)
        event_ts = V.event_ts(req.ts)
        text, turns = V.messages_to_text(messages)
        turns = V.exchange_turns(text) if isinstance(messages, str) else turns
        if isinstance(shown, (str, bytes)) or not isinstance(shown, Sequence):
            raise InvalidInput("shown must be a list of memory ids or search hits")
        ids = list(dict.fromkeys(V.check_memory_id(getattr(s, "id", s)) for s in shown))
        found = {int(r["id"]): MemoryRecord.from_row(r)
                 for r in (self.ctx.store.by_ids(ids, where=F.eq("user_id", user_id)) if ids else [])}
        found = {i: r for i, r in found.items() if A.visible(r.metadata, agent_id)}  # another agent's: as if missing
        records = [found[i] for i in ids if i in found]
        refused = [f"memory {i} not found for this user; not shown" for i in ids if i not in found]
        tz = user_zone(self.ctx.config, user_id)
        turn = TurnParts(user_id, chat_id, who, event_ts, text, turn_meta, tz, self.ctx.config.categories)
        now_iso = datetime.fromtimestamp(event_ts, tz).isoformat()
        decided = gate(turns, now_iso) if not records and gate_enabled(self.ctx.config) else None
        barred = refused_turn(turns or [{"role": "user", "content": text}], self.ctx.config.categories)
        calls = 0
        plan: MonitorPlan | None
        if barred:  # the project's instructions forbid it: no model call, nothing kept raw
            plan = MonitorPlan(refused=barred, reason=barred[0])
        elif decided is not None:
            adds = [MonitorAdd(text=decided.thing)] if decided.write_episodic and decided.thing.strip() else []
            plan = MonitorPlan(adds=adds, reason=decided.reason)
        else:
            try:
                calls = 1
                plan = self.ctx.processor(KnowledgeMonitor).observe(turns, records, now_iso, chat_id)
            except LLMError as exc:  # kept raw for the pending phase; a forget request in it is honoured now
                plan = None
                said = T.user_lines(turns) if turns else text
                asks, rest = forget_split(said)
                raw = rest if asks else text
                meta = pending_metadata(raw, [] if asks else turns, ts_to_iso(event_ts), chat_id, who, turn_meta)
                kept = self.ctx.writer.insert([new_row(user_id, MemoryType.EPISODIC, event_ts, chat_id, who, raw, meta,
                                                       said_ts=event_ts, tz=tz, declared=self.ctx.config.categories)], actor="api") if raw else []
                result = ObserveResult(added=kept, refused=refused, llm_calls=1, pending_decision=bool(kept),
                                       reason=f"LLM failed, the turn kept raw for a later decision: {exc}")
        if plan is not None:
            plan.refused = refused + plan.refused
            result = apply_plan(self.ctx.store, self.ctx.embedder, self.ctx.write_lock, self.ctx.writer, plan, turn,
                                decay_table(self.ctx.config.decay_preset, self.ctx.config.categories))
            result.llm_calls = calls
        said = T.user_lines(turns) if turns else text
        asks = forget_asks(said)
        from .records import RecordService

        search = functools.partial(RecordService(self.ctx).find, agent_id=agent_id)  # forget within the agent's view
        if asks:  # what the request names among all this user's memories, not only those shown (memory/forget.py)
            more = forget_named(self.ctx, search, user_id, asks, actor=ACTOR, skip=set(result.deleted))
            result.deleted += more.deleted
            result.refused += more.refused
        # a correction supersedes what it corrects at once (said in the reason; each has a "superseded" event)
        fixed = [i for i in supersede_corrected(self.ctx, search, user_id, said, list(result.added), event_ts, actor=ACTOR)
                 if i not in result.deleted]
        if fixed:
            result.reason = f"{result.reason}; superseded memories {fixed} (the user corrected them)".lstrip("; ")
        from .assistant_turns import keep_assistant  # the assistant's recommendation, list, plan or answer

        answered = [] if barred else keep_assistant(self.ctx, user_id, chat_id, turn_meta, event_ts, turns, tz)
        if answered:
            result.added += answered
            result.reason = f"{result.reason}; kept what the assistant said as memory {answered}".lstrip("; ")
        return result
