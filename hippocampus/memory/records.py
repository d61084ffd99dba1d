"""The record service: add, update, delete and read one user's memories, and search them.
The facade (memory/facade.py) delegates its core verbs here; it validates, orchestrates and records
history, while storage, embeddings and retrieval each live in their own folder."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

from .. import validation as V
from ..context import MemoryContext
from ..contract.requests import AddRequest, ListRequest, PageRequest, SearchRequest, UpdateRequest, build
from ..errors import InvalidInput, NotFound
from ..lifecycle import expiry
from ..lifecycle.decay import forgotten_row
from ..lifecycle.expiry import expired
from ..lifecycle.rows import plain_row
from ..lifecycle.when import user_zone
from ..models import (
    LIFE_KEY,
    AddResult,
    HistoryAction,
    HistoryEvent,
    MemoryPage,
    MemoryRecord,
    MemoryType,
    SearchResult,
    carried,
    now_ts,
)
from ..retrieval import as_of as T
from ..retrieval import check_search_mode
from ..store import MEMORY_FIELDS
from ..store import agents as A
from ..store import filters as F
from ..store.removal import remove_with_history
from ..text import slots
from ..text.assistant import ordinal


def deletion_event(old: MemoryRecord, user_id: str, **details: Any) -> dict[str, Any]:
    """The "deleted" history event of `delete` and `delete_many` (batch.py), keeping the row for `undo`."""
    return HistoryEvent(memory_id=old.id, user_id=user_id, action=HistoryAction.DELETED, old_text=old.text, actor="api",
                        details={**details, "row": forgotten_row(old)}).model_dump(mode="json")


def unchanged(old: MemoryRecord, text: str, metadata: dict[str, Any], until: int | None) -> bool:
    """Whether an update would change nothing: the same text and every given key already holding its value."""
    if until is not None:
        metadata = {**metadata, expiry.KEY: until}
    return old.text == text and all(k in old.metadata and old.metadata[k] == v for k, v in metadata.items())


class RecordService:
    """The core verbs over a MemoryContext."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def add(self, req: AddRequest) -> AddResult:
        """Remember a turn. AddRequest (contract/requests.py) documents the fields; Memory.add the errors."""
        user_id, chat_id, who, mtype, event_ts, metadata = self.checked(req)
        text, turns = V.messages_to_text(req.messages)
        tz = user_zone(self.ctx.config, user_id)  # the user's own zone, else the setting's (when.py)
        until = expiry.resolve(req.expires_at, event_ts, tz)  # resolved once, from when it was said
        if req.infer and mtype is MemoryType.EPISODIC:  # the LLM path's modules load here: a CLI list or search needs none
            from ..processors.write_decider import EpisodicWriteDecider
            from .assistant_turns import keep_assistant, with_assistant
            from .forget import forget_named, supersede_corrected
            from .online import add_inferred

            ctx = self.ctx
            seen = functools.partial(self.find, agent_id=req.agent_id)  # forget and correct within the agent's view

            def forget(asks: list[str]) -> list[int]:  # memory/forget.py: as observe honours a forget request
                return forget_named(ctx, seen, user_id, asks, actor="write_decider").deleted

            def correct(said: str, new_ids: list[int]) -> list[int]:  # memory/forget.py: a correction supersedes at once
                return supersede_corrected(ctx, seen, user_id, said, new_ids, event_ts, actor="write_decider")

            added = add_inferred(ctx.writer, lambda: ctx.processor(EpisodicWriteDecider), ctx.config, user_id, chat_id, who,
                                 metadata, event_ts, text, turns, forget=forget, correct=correct)
            added = with_assistant(added, keep_assistant(ctx, user_id, chat_id, metadata, event_ts, turns, tz))
            for memory_id in added.ids if until is not None else []:  # what the decider kept expires as asked
                old = self.get(memory_id, user_id)
                ctx.writer.rewrite(old, old.text, expiry.stamp(old.metadata, until), HistoryAction.UPDATED, actor="api",
                                   details={"expires_at": until})
            return added
        ids = self.ctx.writer.insert([self.plain(req)], actor="api")
        return AddResult(ids=ids, stored=True, reason="stored without inference (infer=False)")

    def checked(self, req: AddRequest) -> tuple[str, str, str, MemoryType, int, dict[str, Any]]:
        """The request's ids, kind, time and metadata, each checked (validation.py), the carried fields
        (models/record.py CARRIED: agent_id, run_id, ...) put into the metadata by name."""
        user_id = V.check_id("user_id", req.user_id)
        chat_id = V.check_id("chat_id", req.chat_id)
        who = V.check_id("who", req.who if req.who is not None else user_id, V.WHO_MAX)
        agent_id, run_id = A.check_ids(req.agent_id, req.run_id)
        metadata = A.stamp(V.check_caller_metadata(req.metadata) | carried(req), agent_id, run_id)  # the writer's scope
        mtype = V.check_memory_type(req.memory_type) or MemoryType.EPISODIC
        return user_id, chat_id, who, mtype, V.event_ts(req.ts), metadata

    def plain(self, req: AddRequest) -> dict[str, Any]:
        """The row of a turn stored as it is (infer=False): lifecycle/rows.py's, its expiry stamped."""
        user_id, chat_id, who, mtype, event_ts, metadata = self.checked(req)
        text, _turns = V.messages_to_text(req.messages)
        tz = user_zone(self.ctx.config, user_id)
        row = plain_row(user_id, mtype, event_ts, chat_id, who, text, metadata, tz, declared=self.ctx.config.categories)
        until = expiry.resolve(req.expires_at, event_ts, tz)
        return row if until is None else {**row, "metadata": expiry.stamp(row["metadata"], until)}

    def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """Store many turns as-is (infer=False), embedding them in batches, each item read as add's request
        (`text` is another name for `messages`). Memory.add_many documents the arguments and errors."""
        rows = []
        for item in items:
            if not isinstance(item, dict):
                raise InvalidInput(f"add_many takes dicts, got {type(item).__name__}")
            fields = {("messages" if k == "text" else k): v for k, v in item.items()}
            rows.append(self.plain(build(AddRequest, **{**fields, "infer": False})))
        ids: list[int] = []
        for start in range(0, len(rows), max(1, batch_size)):
            ids += self.ctx.writer.insert(rows[start : start + batch_size], actor="api")
        return ids

    def update(self, req: UpdateRequest) -> MemoryRecord:
        """Replace a memory's text (re-embedded) and merge `metadata` into it. UpdateRequest (contract/requests.py)
        documents the fields and errors."""
        memory_id = V.check_memory_id(req.memory_id)
        user_id = V.check_id("user_id", req.user_id)
        text = V.check_text(req.text)
        extra = V.check_caller_metadata(req.metadata)
        until = expiry.resolve(req.expires_at, now_ts(), user_zone(self.ctx.config, user_id))  # relative words: from now
        old = self.get(memory_id, user_id=user_id)
        if unchanged(old, text, extra, until):  # nothing to record: no event, no re-embedding
            return old
        new_meta = {**old.metadata, **extra, "updated_at": now_ts()}
        if until is not None:
            new_meta = expiry.stamp(new_meta, until)
            extra = {**extra, expiry.KEY: until, **({LIFE_KEY: new_meta[LIFE_KEY]} if LIFE_KEY in new_meta else {})}  # undo puts both back
        if extra:  # old and new keys together stay within a limit
            V.check_stored_metadata(new_meta)
        if old.memory_type is MemoryType.EPISODIC and "thing" in old.metadata and "thing" not in extra:
            new_meta["thing"] = text
        if text != old.text and slots.KEY not in extra:  # the statements of the new text (text/slots.py)
            new_meta[slots.KEY] = slots.stored(slots.read(text))
        details = {"metadata": {"before": {k: old.metadata[k] for k in extra if k in old.metadata},  # what undo puts back
                                "absent": [k for k in extra if k not in old.metadata]}} if extra else None
        return self.ctx.writer.rewrite(old, text, new_meta, HistoryAction.UPDATED, actor="api", details=details)

    def delete(self, memory_id: int, user_id: str) -> None:
        """Delete one memory of this user. Memory.delete documents the arguments and errors."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        with self.ctx.write_lock:  # the history event first, then the row (removal.py): never a row gone without it
            old = self.get(memory_id, user_id=user_id)  # under the lock: a racing delete has either won or not started
            remove_with_history(self.ctx.store, [deletion_event(old, user_id)],
                                F.and_(F.eq("id", memory_id), F.eq("user_id", user_id)), [memory_id])

    def reset(self, user_id: str) -> int:
        """Erase every memory of this user and its history, for good. Memory.reset documents the arguments and
        errors."""
        user_id = V.check_id("user_id", user_id)
        scope = F.eq("user_id", user_id)
        with self.ctx.write_lock:
            count = self.ctx.store.count(scope)
            self.ctx.store.delete(scope)
            self.ctx.store.delete_history(scope)
        return count

    def find(self, query: str, user_id: str, **fields: Any) -> SearchResult:
        """`search` with its fields by name: what the services that search for themselves call (forget, observe,
        the lifecycle)."""
        return self.search(build(SearchRequest, query=query, user_id=user_id, **fields))

    def search(self, req: SearchRequest) -> SearchResult:
        """Up to k_episodic episodic and k_semantic semantic memories, each list best first. SearchRequest
        (contract/requests.py) documents the fields and errors."""
        query, user_id, limit, memory_type, memory_types = req.query, req.user_id, req.limit, req.memory_type, req.memory_types
        graph, mode, include_expired = req.graph, req.mode, req.include_expired
        query = V.check_text(query, "query")
        user_id = V.check_id("user_id", user_id)
        metadata = V.check_metadata(req.filters, "filters")
        metadata = self.scoped(metadata, req.agent_id, req.agent_scope, req.run_id) or {}
        if memory_type is None and not memory_types and isinstance(metadata.get("memory_type"), str):
            memory_type = metadata["memory_type"]  # filters={"memory_type": "procedural"} picks the kind searched
        kinds = V.check_memory_types(memory_type, memory_types)
        limit = V.check_limit(limit) if limit is not None else None
        caller = self.ctx.retriever.caller_filter(user_id, metadata)  # store/filters.py: the fields and their rule
        if graph is not None and not isinstance(graph, bool):
            raise InvalidInput(f"graph must be true, false or None, got {graph!r}")
        mode = check_search_mode(mode) if mode is not None else self.ctx.config.search_mode
        vector = self.ctx.retriever.encode_query(query, mode)  # None: BM25 serves (bm25 mode or embedder down)
        mode = mode if vector is not None else "bm25"
        include_expired = V.check_flag("include_expired", include_expired)
        at = T.moment(req.as_of, user_zone(self.ctx.config, user_id))  # retrieval/as_of.py: what was current then
        past = at is None and not req.include_superseded and T.asks_past(query)  # "where did I live before?"
        item = ordinal(query)  # "the 7th job idea": the list holding item 7 first (text/assistant.py)
        result, memo = SearchResult(), {}  # memo: what the kinds share (one cross-language search)
        for kind in kinds:
            k = getattr(self.ctx.config, f"k_{kind.value}") if limit is None else limit
            depth = k if at is None else min(1000, 3 * k + 10)  # room for what the moment leaves out
            hits = self.ctx.retriever.search(query, user_id, depth, kind, caller, vector, mode,
                                             include_superseded=bool(req.include_superseded) or past or at is not None, graph=graph,
                                             include_expired=include_expired or at is not None,
                                             kinds=[x.value for x in kinds], memo=memo)
            if at is not None:
                hits = [h for h in hits if T.current_at(h, at, include_expired)]
            setattr(result, kind.value, T.items_first(T.ordered(hits, past), item)[:k])
        return result

    def get(self, memory_id: int, user_id: str) -> MemoryRecord:
        """One memory of this user. Memory.get documents the arguments and errors."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        rows = self.ctx.store.by_ids([memory_id], where=F.eq("user_id", user_id))
        if not rows:
            raise NotFound(f"memory {memory_id} not found for this user")
        return MemoryRecord.from_row(rows[0])

    def owner(self, memory_id: int) -> str | None:
        """Whose memory this is (its row, else its history: a deleted one), None when no user has it: for a face
        whose callers name a memory by id alone (compat/mem0.py, on a store its program owns)."""
        memory_id = V.check_memory_id(memory_id)
        rows = self.ctx.store.by_ids([memory_id], ["id", "user_id"])
        if rows:
            return str(rows[0]["user_id"])
        events = self.ctx.store.history(F.and_(F.eq("memory_id", memory_id), F.cmp("user_id", "!=", "")))
        return str(events[0]["user_id"]) if events else None

    def users(self) -> list[str]:
        """Every user with a memory or a history event, sorted: what erasing a whole store goes through."""
        found = {str(r["user_id"]) for page in self.ctx.store.iterate("", ["id", "user_id"]) for r in page}
        found |= {str(e["user_id"]) for e in self.ctx.store.history(F.cmp("user_id", "!=", ""))}
        return sorted(found)

    def scoped(self, filters: dict[str, Any] | None, agent_id: Any, agent_scope: Any, run_id: Any) -> dict[str, Any] | None:
        """The caller's filters with the agent scope and run ANDed in (store/agents.py), every id checked."""
        agent_id, run_id = A.check_ids(agent_id, run_id)
        return A.with_scope(filters, agent_id, A.check_scope(agent_id, agent_scope), run_id)

    def every(self, user_id: str, **fields: Any) -> list[MemoryRecord]:
        """`get_all` with its fields by name, expired memories included unless `include_expired=False`: what the
        services that read every memory of a user call (transfer/)."""
        return self.get_all(build(ListRequest, user_id=user_id, **{"include_expired": True, **fields}))

    def get_all(self, req: ListRequest) -> list[MemoryRecord]:
        """Every memory of this user, oldest event first. ListRequest (contract/requests.py) documents the fields
        and errors."""
        return sorted(self.iter_all(req), key=lambda r: (r.ts, r.id))

    def page(self, req: PageRequest) -> MemoryPage:
        """A page of `get_all`. PageRequest (contract/requests.py) documents the fields and errors."""
        offset = V.check_offset(req.offset)
        limit = V.check_limit(req.limit)
        records = self.get_all(req)
        end = offset + limit
        return MemoryPage(items=records[offset:end], total=len(records), offset=offset,
                          next_offset=end if end < len(records) else None)

    def iter_all(self, req: ListRequest) -> Iterator[MemoryRecord]:
        """Every memory of this user, a page at a time from the store, in no particular order (`get_all` sorts
        them). ListRequest (contract/requests.py) documents the fields and errors."""
        user_id = V.check_id("user_id", req.user_id)
        mtype = V.check_memory_type(req.memory_type)
        keep_expired = V.check_flag("include_expired", req.include_expired)
        filters = V.check_metadata(req.filters, "filters") if req.filters is not None else None
        filters = self.scoped(filters, req.agent_id, req.agent_scope, req.run_id)
        where = self.ctx.retriever.caller_filter(user_id, V.check_metadata(filters, "filters")).expr if filters else ""
        scope = F.and_(F.eq("user_id", user_id), F.eq("memory_type", mtype.value) if mtype else None, where)
        now = now_ts()
        for page in self.ctx.store.iterate(scope, MEMORY_FIELDS):
            for row in page:
                if keep_expired or not expired(row, now):
                    yield MemoryRecord.from_row(row)

    def history(self, memory_id: int, user_id: str) -> list[HistoryEvent]:
        """Every change to this memory, oldest first. Memory.history documents the arguments and errors."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        rows = self.ctx.store.history(F.and_(F.eq("memory_id", memory_id), F.eq("user_id", user_id)))
        if not rows:  # never existed for this user, or another user's id: the same answer as get()
            raise NotFound(f"no history for memory {memory_id} for this user")
        return [HistoryEvent.model_validate(r) for r in rows]

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """How many memories there are ("total", "episodic", "semantic"), for one user or, with user_id None,
        the whole store. Memory.stats documents the arguments and errors."""
        scope = F.eq("user_id", V.check_id("user_id", user_id)) if user_id is not None else ""
        out: dict[str, Any] = {"total": self.ctx.store.count(scope)}
        for mtype in MemoryType:
            out[mtype.value] = self.ctx.store.count(F.and_(scope, F.eq("memory_type", mtype.value)))
        without = self.ctx.store.cross.missing(user_id)
        if without is not None:  # the store keeps cross-language vectors: memories lacking one (store/xvector.py)
            out["without_cross_vector"] = without
        out["store"] = self.ctx.config.milvus_uri
        out["embedder"] = self.ctx.embedder.model_name
        return out
