"""The facade's lifecycle verbs (README "How memories age"): mark_used (reinforcement), curate,
decay, restore and the prompt block.
A part of `Memory` (it inherits them), kept in its own file so that memory.py stays the core verbs;
the rules themselves live in lifecycle/, below the facade."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Sequence

from . import validation as V
from .config import MemoryConfig
from .embeddings import Embedder
from .errors import InvalidInput, NotFound
from .lifecycle import prompt_block
from .lifecycle.decay import Progress, last_full_run, mark_full_run, run_decay
from .lifecycle.policy import PERMANENT, THRESHOLDS, decay_table
from .models import (LIFE_KEY, Category, DecayStats, HistoryAction, HistoryEvent, Lifecycle, MemoryRecord, MemoryType, ObserveResult,
                     State, now_ts, ts_to_iso)
from .store import MilvusStore
from .store import filters as F
from .writes import Writer, new_row

if TYPE_CHECKING:
    from .models import SearchResult


def revived(saved: dict[str, Any]) -> dict[str, Any]:
    """The metadata of a forgotten row brought back: active again, its score at least 0.5 from now
    (so that the next decay pass does not take it at once)."""
    meta = dict(saved.get("metadata") or {})
    life = Lifecycle.of(meta, MemoryType(saved["memory_type"]), meta.get("created_at"))
    meta[LIFE_KEY] = life.model_copy(update={"importance": max(life.importance, 0.5), "state": State.ACTIVE,
                                             "last_activated": now_ts()}).stored()
    return meta


def bring_back(store: MilvusStore, embedder: Embedder, saved: dict[str, Any], old_id: int, user_id: str,
               metadata: dict[str, Any], actor: str, details: dict[str, Any] | None = None, vector: list[float] | None = None) -> int:
    """Insert again a row that a history event kept (forgotten_row: a forget, a delete, a merge's
    source) with `metadata`: re-embedded (unless `vector` is given), the same text, type, times, chat,
    who and hit count under a new id, recorded both ways ("restored": restored_from on the new id,
    restored_as on the old one, each with `details`). The new id. The caller holds the write lock."""
    if store.query(F.and_(F.eq("id", int(old_id)), F.eq("user_id", user_id)), ["id"], limit=1):
        raise InvalidInput(f"memory {old_id} still exists (its removal did not finish); nothing to bring back")
    row = new_row(user_id, MemoryType(saved["memory_type"]), int(saved["ts"]), saved["chat_id"], saved["who"], saved["text"], metadata)
    row["hit_count"] = int(saved.get("hit_count") or 0)
    row["vector"] = vector if vector is not None else embedder.encode([row["text"]], role="passage")[0].tolist()
    new_id = store.insert([row])[0]
    store.add_history([HistoryEvent(memory_id=i, user_id=user_id, action=HistoryAction.RESTORED, new_text=row["text"], actor=actor,
                                    details={**(details or {}), key: other}).model_dump(mode="json")
                       for i, key, other in ((new_id, "restored_from", old_id), (old_id, "restored_as", new_id))])
    return new_id


class LifecycleVerbs:
    """Mixed into Memory; uses its store, config, write lock and writer."""

    config: MemoryConfig
    store: MilvusStore
    _write_lock: threading.Lock
    _writes: Writer
    embedder: Embedder
    llm: Any  # Memory's ChatModel property

    if TYPE_CHECKING:  # Memory's own, declared for type checkers only (never a silent stub at run time)
        def search(self, query: str, user_id: str, limit: int | None = None, **kw: Any) -> "SearchResult": ...
        def history(self, memory_id: int, user_id: str) -> list[HistoryEvent]: ...

    def mark_used(self, memory_ids: int | Sequence[int], user_id: str, context: str | None = None) -> list[MemoryRecord]:
        """The chat hook reports which recalled memories the answer actually used (a memory that was
        only retrieved does not count as used). Each one's hit_count rises by exactly one (history
        "hit") and its score is reinforced, s + (1 - s) * 0.2, when the use counts (once per 2 hours,
        at most 3 times a day: lifecycle/policy.py); with `context` (the current conversation) each
        episodic one also goes to the Reconsolidator (one LLM call each; history "reconsolidated"; an LLM failure leaves it as it was).
        The offline rules only append the user's clauses that share a word with the memory and add one,
        as "(update: ...)"; they never correct or rewrite it.

        Raises InvalidInput for a bad id, user_id or context; NotFound, before anything changes,
        when an id is unknown or another user's; EmbeddingError / StoreError on failure."""
        from .processors.reconsolidator import EpisodicReconsolidator
        from .lifecycle.policy import decay_table
        from .online import record_use

        user_id = V.check_id("user_id", user_id)
        ids = list(dict.fromkeys(V.check_memory_id(i) for i in ([memory_ids] if isinstance(memory_ids, (int, str)) else memory_ids)))
        context = V.check_text(context, "context") if context is not None else None
        if not ids:
            return []
        rows = self.store.query(F.and_(F.in_("id", ids), F.eq("user_id", user_id)), limit=len(ids))
        missing = sorted(set(ids) - {int(r["id"]) for r in rows})
        if missing:
            raise NotFound(f"memories {missing} not found for this user; nothing was changed")
        records = [MemoryRecord.from_row(r) for r in rows]
        reconsolidator = EpisodicReconsolidator(self.llm, self.config.prompts_dir) if context else None
        table = decay_table(self.config.decay_preset)
        return [record_use(self.store, self.embedder, self._write_lock, rec, reconsolidator, context, table) for rec in records]

    def observe(self, messages: str | list[dict[str, str]], user_id: str, shown: Sequence[Any] = (), chat_id: str = "default",
                who: str | None = None, metadata: dict[str, Any] | None = None, *, ts: Any = None) -> ObserveResult:
        """The chat hook's after-turn call in one LLM call (the KnowledgeMonitor), in place of
        add(infer=True), mark_used and reconsolidation: given the turn (with the answer) and the
        memories `shown` for it (ids or search hits, best first; at most 50 reach the model), the
        model adds what is new, and per shown memory updates (the old text to history), boosts,
        deletes (soft: restorable) or skips it, and says which the answer used (hit + reinforcement).
        Ids outside the shown set, and updates or deletes of core memories, are refused and listed.
        With nothing shown, a turn the rules gate is certain of costs no call. A model failure keeps
        the turn raw, pending, as add(infer=True) does; nothing else changes.

        Raises InvalidInput for a bad argument, as `add`; EmbeddingError / StoreError on failure. A
        shown id that is missing or another user's is not shown to the model (listed in `refused`)."""
        from .errors import LLMError
        from .lifecycle.policy import decay_table
        from .observe import TurnParts, apply_plan
        from .processors.gate import gate
        from .processors.monitor import KnowledgeMonitor, MonitorPlan
        from .processors.results import MonitorAdd
        from .processors.write_decider import gate_enabled, pending_metadata

        user_id = V.check_id("user_id", user_id)
        chat_id = V.check_id("chat_id", chat_id)
        who = V.check_id("who", who if who is not None else user_id, V.WHO_MAX)
        turn_meta = V.check_caller_metadata(metadata)
        event_ts = V.event_ts(ts)
        text, turns = V.messages_to_text(messages)
        turns = V.exchange_turns(text) if isinstance(messages, str) else turns
        if isinstance(shown, (str, bytes)) or not isinstance(shown, Sequence):
            raise InvalidInput("shown must be a list of memory ids or search hits")
        ids = list(dict.fromkeys(V.check_memory_id(getattr(s, "id", s)) for s in shown))
        found = {int(r["id"]): MemoryRecord.from_row(r)
                 for r in (self.store.query(F.and_(F.in_("id", ids), F.eq("user_id", user_id)), limit=len(ids)) if ids else [])}
        records = [found[i] for i in ids if i in found]
        refused = [f"memory {i} not found for this user; not shown" for i in ids if i not in found]
        turn = TurnParts(user_id, chat_id, who, event_ts, text, turn_meta)
        now_iso = ts_to_iso(event_ts)
        decided = gate(turns, now_iso) if not records and gate_enabled(self.config) else None
        calls = 0
        if decided is not None:
            adds = [MonitorAdd(text=decided.thing)] if decided.write_episodic and decided.thing.strip() else []
            plan = MonitorPlan(adds=adds, reason=decided.reason)
        else:
            try:
                calls = 1
                plan = KnowledgeMonitor(self.llm, self.config.prompts_dir).observe(turns, records, now_iso, chat_id)
            except LLMError as exc:
                meta = pending_metadata(text, turns, now_iso, chat_id, who, turn_meta)
                kept = self._writes.insert([new_row(user_id, MemoryType.EPISODIC, event_ts, chat_id, who, text, meta)], actor="api")
                return ObserveResult(added=kept, refused=refused, llm_calls=1, pending_decision=True,
                                     reason=f"LLM failed, the turn kept raw for a later decision: {exc}")
        plan.refused = refused + plan.refused
        result = apply_plan(self.store, self.embedder, self._write_lock, self._writes, plan, turn, decay_table(self.config.decay_preset))
        result.llm_calls = calls
        return result

    def decay(self, user_id: str | None = None, now: int | None = None, progress: Progress | None = None) -> DecayStats:
        """Archive the memories whose score fell below 0.2 (or whose todo date passed) and forget those
        below 0.05 (deleted, the row kept in a "forgotten" history event: see `restore`), for one user
        or all; core and system memories never. The MemoryReviewer looks at what reached 0.9 (promote
        to core or keep) and, with a real model, at what is about to be archived (keep at 0.5, delete,
        promote); offline, names, birthdays and standing preferences are promoted. `now` (epoch seconds) stands in for the clock in
        simulations. Consolidation runs it too, unless `decay_preset` is off.

        Raises InvalidInput for a bad user_id or now; StoreError on failure."""
        user_id = V.check_id("user_id", user_id) if user_id is not None else None
        now = V.check_ts(now) if now is not None else now_ts()
        table = decay_table(self.config.decay_preset)
        real_model = self.config.llm_provider != "offline"
        stats = run_decay(self.store, self._write_lock, user_id, now, table, THRESHOLDS, progress,
                          review=self._review(real_model), review_low=real_model)
        if user_id is None:
            mark_full_run(self.store, now, stats)
        return stats

    def last_decay(self) -> int | None:
        """When decay last ran over every user (epoch seconds; kept in the store, so it survives a
        restart), or None when it never has: a service decays at start when this is over a day ago.

        Raises StoreError on failure."""
        return last_full_run(self.store)

    def _review(self, real_model: bool) -> Any:
        """The MemoryReviewer as the decay step calls it; with a real model it sees related memories
        and may search (the offline rules need neither)."""
        from .processors.reviewer import MemoryReviewer

        reviewer = MemoryReviewer(self.llm, self.config.prompts_dir)

        def texts(query: str, user_id: str, skip: int | None = None) -> list[str]:
            return [h.text for h in self.search(query, user_id=user_id, limit=5).all if h.id != skip][:5]

        def review(record: MemoryRecord, trigger: str) -> tuple[str, str]:
            if not real_model:
                result = reviewer.review(record, trigger)
            else:
                result = reviewer.review(record, trigger, texts(record.text, record.user_id, record.id),
                                         search=lambda q: texts(q, record.user_id))
            return result.action, result.reason

        return review

    def restore(self, memory_id: int, user_id: str) -> MemoryRecord:
        """Bring back a memory that decay forgot, from its history: the same text, type, times and
        metadata under a new id (recorded both ways in history), active again at score 0.5.

        Raises InvalidInput for a bad id, for a memory that was not forgotten or was restored
        already; NotFound when there is no history for this user; EmbeddingError / StoreError."""
        with self._write_lock:  # the check and the write together: two restores cannot both succeed
            events = self.history(memory_id, user_id)  # validates; NotFound for another user's id
            forgot = [e for e in events if e.action is HistoryAction.FORGOTTEN and "row" in e.details]
            again = [e.details.get("restored_as") for e in events if e.action is HistoryAction.RESTORED]
            if not forgot or again:  # once restored, the new id carries the memory on
                done = f" (restored already as {again[0]})" if again else ""
                raise InvalidInput(f"memory {memory_id} was not forgotten by decay{done}; nothing to restore")
            saved = forgot[-1].details["row"]
            new_id = bring_back(self.store, self.embedder, saved, memory_id, user_id, revived(saved), actor="api")
        rows = self.store.query(F.and_(F.eq("id", new_id), F.eq("user_id", user_id)), limit=1)
        return MemoryRecord.from_row(rows[0])

    def curate(self, memory_id: int, user_id: str, *, category: Category | str | None = None,
               importance: float | None = None) -> MemoryRecord:
        """A person's (or the agent's) explicit judgement: set a memory's category (`core` promotes it:
        never decays, never removed by a job) and/or its importance in [0, 1], which counts from now.
        The text and id stay; history records the change ("updated", details old and new).

        Raises InvalidInput for a bad id, user_id, category or importance, or when neither is given;
        NotFound when the memory is missing or another user's; StoreError on failure."""
        if category is None and importance is None:
            raise InvalidInput("curate needs a category or an importance")
        try:
            new_category = Category(category) if category is not None else None
        except ValueError:
            raise InvalidInput(f"unknown category {category!r}; use one of {[c.value for c in Category]}") from None
        if importance is not None and (isinstance(importance, bool) or not isinstance(importance, (int, float))
                                       or not 0.0 <= importance <= 1.0):
            raise InvalidInput(f"importance must be a number between 0 and 1, got {importance!r}")
        old = self.get(memory_id, user_id)
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
        details: dict[str, Any] = {"lifecycle": {k: [getattr(v, "value", v) for v in pair] for k, pair in changed.items()}}
        if life.last_activated != new_life.last_activated:  # kept so that `undo` puts the score back exactly
            details["last_activated"] = [life.last_activated, new_life.last_activated]
        return self._writes.rewrite(old, old.text, meta, HistoryAction.UPDATED, actor="api", details=details)

    def context(self, user_id: str, query: str | None = None, max_items: int = THRESHOLDS.inject_max_items,
                min_score: float = THRESHOLDS.inject_min_score, dates: bool = False, now: int | None = None) -> str:
        """The block an agent puts in its system prompt: active memories scoring at least `min_score`,
        at most `max_items`, core first, then (with `query`) what the search finds, then the rest by
        score, grouped by category; each line dated with `dates`. The texts sit inside <data>
        delimiters that no stored text can close. "" when nothing qualifies.

        Raises InvalidInput for a bad user_id, query, max_items (0..1000), min_score (0..1) or now;
        StoreError on failure."""
        user_id = V.check_id("user_id", user_id)
        max_items = V.check_limit(max_items, "max_items")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 1:
            raise InvalidInput(f"min_score must be a number between 0 and 1, got {min_score!r}")
        now = V.check_ts(now) if now is not None else now_ts()
        relevant = [h.memory for h in self.search(query, user_id=user_id, limit=max_items).all] if query is not None else []
        records = [MemoryRecord.from_row(row) for page in self.store.iterate(F.eq("user_id", user_id)) for row in page]
        table = decay_table(self.config.decay_preset)
        chosen = prompt_block.select(records, now, relevant, max_items, float(min_score), table)
        return prompt_block.render(chosen, dates)
