"""The lifecycle service (docs/aging.md): decay, restore, curate and the prompt block.
The facade (memory/facade.py) delegates its verbs here; the rules live beside it in lifecycle/."""

from __future__ import annotations

from typing import Any, Protocol

from .. import validation as V
from ..context import MemoryContext
from ..contract.requests import ContextRequest, CurateRequest
from ..errors import InvalidInput
from ..models import (
    LIFE_KEY,
    DecayStats,
    HistoryAction,
    HistoryEvent,
    MemoryRecord,
    SearchResult,
    State,
    now_ts,
)
from ..store import filters as F
from ..store.leases import ALL, JOBS
from . import prompt_block
from .categories import parse_category
from .decay import Progress, last_full_run, mark_full_run, run_decay
from .policy import PERMANENT, THRESHOLDS, decay_table
from .restore import bring_back, revived


class Reader(Protocol):
    """What the lifecycle service reads through the facade's record service (memory/records.py)."""

    def find(self, query: str, user_id: str, **fields: Any) -> SearchResult: ...
    def get(self, memory_id: int, user_id: str) -> MemoryRecord: ...
    def history(self, memory_id: int, user_id: str) -> list[HistoryEvent]: ...


class LifecycleService:
    """Aging verbs over a MemoryContext; reads memories through `reader` (search, get, history)."""

    def __init__(self, ctx: MemoryContext, reader: Reader):
        self.ctx = ctx
        self.reader = reader

    def decay(self, user_id: str | None = None, now: int | None = None, progress: Progress | None = None) -> DecayStats:
        """Archive the memories whose score fell below 0.2 (or whose todo date passed) and forget those below
        0.05 (deleted, the row kept in a "forgotten" history event). Memory.decay documents the arguments
        and errors."""
        user_id = V.check_id("user_id", user_id) if user_id is not None else None
        now = V.check_ts(now) if now is not None else now_ts()
        table = decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        real_model = self.ctx.config.llm_provider != "offline"
        # one replica at a time per user (store/leases.py); inside a consolidation the same thread holds it already
        with self.ctx.store.leases.hold(JOBS, user_id if user_id is not None else ALL, "decay", wait_s=None) as lease:
            stats = run_decay(self.ctx.store, self.ctx.write_lock, user_id, now, table, THRESHOLDS, progress,
                              review=self._review(real_model), review_low=real_model, fence=lease.check)
            if user_id is None:
                mark_full_run(self.ctx.store, now, stats)
        return stats

    def last_decay(self) -> int | None:
        """When decay last ran over every user (epoch seconds), or None. Memory.last_decay documents the
        errors."""
        return last_full_run(self.ctx.store)

    def _review(self, real_model: bool) -> Any:
        """The MemoryReviewer as the decay step calls it; with a real model it sees related memories
        and may search (the offline rules need neither)."""
        from ..processors.reviewer import MemoryReviewer

        reviewer = self.ctx.processor(MemoryReviewer)

        def texts(query: str, user_id: str, skip: int | None = None) -> list[str]:
            return [h.text for h in self.reader.find(query, user_id=user_id, limit=5).all if h.id != skip][:5]

        def review(record: MemoryRecord, trigger: str) -> tuple[str, str]:
            if not real_model:
                result = reviewer.review(record, trigger)
            else:
                result = reviewer.review(record, trigger, texts(record.text, record.user_id, record.id),
                                         search=lambda q: texts(q, record.user_id))
            return result.action, result.reason

        return review

    def restore(self, memory_id: int, user_id: str) -> MemoryRecord:
        """Bring back a memory that decay forgot, from its history. Memory.restore documents the arguments and
        errors."""
        with self.ctx.write_lock:  # the check and the write together: two restores cannot both succeed
            events = self.reader.history(memory_id, user_id)  # validates; NotFound for another user's id
            forgot = [e for e in events if e.action is HistoryAction.FORGOTTEN and "row" in e.details]
            again = [e.details.get("restored_as") for e in events if e.action is HistoryAction.RESTORED]
            if not forgot or again:  # once restored, the new id carries the memory on
                done = f" (restored already as {again[0]})" if again else ""
                raise InvalidInput(f"memory {memory_id} was not forgotten by decay{done}; nothing to restore")
            saved = forgot[-1].details["row"]
            new_id = bring_back(self.ctx.store, self.ctx.embedder, saved, memory_id, user_id, revived(saved), actor="api")
        rows = self.ctx.store.by_ids([new_id], where=F.eq("user_id", user_id))
        return MemoryRecord.from_row(rows[0])

    def curate(self, req: CurateRequest) -> MemoryRecord:
        """A person's (or the agent's) explicit judgement. CurateRequest (contract/requests.py) documents the
        fields and errors."""
        memory_id, user_id, category, importance = req.memory_id, req.user_id, req.category, req.importance
        if category is None and importance is None:
            raise InvalidInput("curate needs a category or an importance")
        # a built-in category or one of the project's own (MemoryConfig.categories); InvalidInput else
        new_category = parse_category(category, self.ctx.config.categories) if category is not None else None
        if importance is not None and (isinstance(importance, bool) or not isinstance(importance, (int, float))
                                       or not 0.0 <= importance <= 1.0):
            raise InvalidInput(f"importance must be a number between 0 and 1, got {importance!r}")
        old = self.reader.get(memory_id, user_id)
        life = old.life
        update: dict[str, Any] = {}
        if new_category is not None:
            update["category"] = new_category
        if importance is not None:
            update.update(importance=float(importance), last_activated=now_ts())
        if life.state is State.ARCHIVED and (new_category in PERMANENT or (importance or 0) >= THRESHOLDS.archive_below):
            update["state"] = State.ACTIVE
        new_life = life.model_copy(update=update)
        meta = {**old.metadata, LIFE_KEY: new_life.stored(), "updated_at": now_ts()}
        changed = {k: [getattr(life, k), getattr(new_life, k)] for k in ("category", "importance", "state")
                   if getattr(life, k) != getattr(new_life, k)}
        if not changed and importance is None:  # the same category again: nothing to record
            return old
        details: dict[str, Any] = {"lifecycle": {k: [getattr(v, "value", v) for v in pair] for k, pair in changed.items()}}
        if life.last_activated != new_life.last_activated:  # kept so that `undo` puts the score back exactly
            details["last_activated"] = [life.last_activated, new_life.last_activated]
        return self.ctx.writer.rewrite(old, old.text, meta, HistoryAction.UPDATED, actor="api", details=details)

    def context(self, req: ContextRequest) -> str:
        """The block an agent puts in its system prompt. ContextRequest (contract/requests.py) documents the fields
        and errors."""
        from ..store import agents as A  # the agent scope (store/agents.py)

        user_id, query, max_items, min_score, now = req.user_id, req.query, req.max_items, req.min_score, req.now

        user_id = V.check_id("user_id", user_id)
        agent_id, run_id = A.check_ids(req.agent_id, req.run_id)
        scope = A.check_scope(agent_id, req.agent_scope)
        max_items = V.check_limit(max_items, "max_items")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 1:
            raise InvalidInput(f"min_score must be a number between 0 and 1, got {min_score!r}")
        now = V.check_ts(now) if now is not None else now_ts()
        relevant = [h.memory for h in self.reader.find(query, user_id=user_id, limit=max_items, agent_id=agent_id, agent_scope=scope,
                                                         run_id=run_id).all] if query is not None else []
        records = [MemoryRecord.from_row(row) for page in self.ctx.store.iterate(F.eq("user_id", user_id)) for row in page
                   if A.visible(row.get("metadata"), agent_id, scope, run_id)]
        table = decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        chosen = prompt_block.select(records, now, relevant, max_items, float(min_score), table)
        return prompt_block.render(chosen, req.dates)
