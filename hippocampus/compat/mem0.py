"""mem0 v3's `Memory`, over hippocampus.Memory: `from hippocampus.compat.mem0 import Memory` and a mem0 program runs
unchanged (docs/mem0.md). A thin face: each verb translates mem0's call shape (mem0_shapes.py) into one or a few
native calls and the answer back into mem0's dicts; filters, search, history and expiry are the native ones.

What differs, on purpose and documented: ids are the native integers (as strings in results, strings or numbers
taken); `score` is the cosine similarity (BM25's score where no dense search ran), which `threshold` compares.
A call scoped by agent_id or run_id without a user_id reads every user's memories that carry it, as mem0's does:
the library keeps memories per user, so such a call asks each user of the store in turn (`_owners`)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InvalidInput, NotFound
from ..memory import Memory as NativeMemory
from ..models import MemoryRecord
from . import mem0_shapes as S
from .mem0_config import native_config
from .mem0_procedure import procedure_summary

_UNSET: Any = object()
_MAX_BATCH = 1000
KINDS = ["episodic", "semantic", "procedural"]


class MemoryNotFound(NotFound, ValueError):
    """No memory has this id: a ValueError as mem0 raises, and the library's NotFound."""


class Memory:
    """mem0's Memory. `Memory()` opens the configured Hippocampus store; `Memory(memory=m)` wraps an open
    hippocampus.Memory; keyword arguments are hippocampus.Memory's (`milvus_uri=...`)."""

    def __init__(self, config: Any = None, *, memory: NativeMemory | None = None, **native: Any):
        if config is not None and not isinstance(config, dict):
            raise InvalidInput("config is a dict (mem0's from_config shape) or None; hippocampus settings go as keywords")
        self._own = memory is None
        self.memory = memory if memory is not None else NativeMemory(**{**native_config(config or {}), **native})

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> Memory:
        """mem0's constructor from its documented dict (mem0_config.py): a Milvus vector store, an OpenAI-compatible
        llm and embedder, custom_instructions and custom_categories are mapped; what has no counterpart is refused
        by name."""
        return cls(config_dict)

    def close(self) -> None:
        """Release the store when this object opened it."""
        if self._own:
            self.memory.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
            metadata: dict[str, Any] | None = None, timestamp: Any = None, expiration_date: Any = None, infer: bool = True,
            memory_type: str | None = None, prompt: str | None = None) -> dict[str, Any]:
        """Remember messages: with `infer` (mem0's default) the native write decision picks what to keep; without,
        each non-system message is one memory, as mem0 stores it. With memory_type="procedural_memory" and an
        agent_id, one memory summarises the whole procedure (_add_procedure). With custom instructions and no model,
        `infer` is refused (the offline rules cannot follow free text). Returns {"results": [{id, memory, event}]}."""
        if prompt is not None:
            raise InvalidInput("prompt= is not supported: set `instructions` in the Hippocampus config (custom_instructions)")
        if memory_type not in (None, "procedural_memory"):
            raise InvalidInput(f"memory_type must be None or 'procedural_memory', got {memory_type!r}")
        user, agent, run = (S.entity_id(v, n) for v, n in ((user_id, "user_id"), (agent_id, "agent_id"), (run_id, "run_id")))
        owner = S.owner_of(user, agent, run)
        if isinstance(messages, list) and not messages:
            return {"results": []}  # nothing said: nothing kept, as mem0 answers
        said = S.turns(messages)
        expiration_date = S.expiration_date(expiration_date)
        metadata = _callers(metadata, S.IMMUTABLE_KEYS, "add")
        if memory_type and agent is None:
            # mem0 makes a procedural memory only for an agent; without agent_id it adds as usual (memory_type unused)
            warnings.warn("hippocampus.compat.mem0: memory_type='procedural_memory' applies only with an agent_id, "
                          "as in mem0; added as ordinary memories", stacklevel=2)
            memory_type = None
        common = dict(user_id=owner, agent_id=agent, run_id=run, ts=timestamp, expires_at=expiration_date,
                      memory_type="procedural" if memory_type else "episodic")
        if memory_type:
            return self._add_procedure(said, metadata, common)
        if infer and self.memory.config.instructions and self._offline():
            raise InvalidInput(
                "custom_instructions are followed only by a model, and no llm is configured (Hippocampus's offline "
                "rules cannot read free-text instructions): add(infer=True) would store what the instructions may "
                "exclude, so nothing was stored. Configure an llm, or pass infer=False to store the messages as said "
                "(mem0 applies custom_instructions only when inferring). docs/mem0.md, 'Differences'")
        if infer:
            # The native decision counts a turn said again as a use of the memory it repeats (stored False): mem0's
            # NONE, which answers no event. The expiry is set on what was stored only, never on the repeated one.
            done = self.memory.add(said, metadata=metadata, infer=True, **{**common, "expires_at": None})  # type: ignore[arg-type]
            fresh = done.ids if done.stored else []
            if fresh and expiration_date is not None:
                self.memory.renew_expiry(dict.fromkeys(fresh, expiration_date), owner)
            return {"results": [self._added(i, owner) for i in fresh]}
        kept = [m for m in said if m["role"] != "system"]
        items = [{"messages": m["content"], "metadata": {**(metadata or {}), "role": m["role"],
                                                         **({"actor_id": m["name"]} if m.get("name") else {})}, **common}
                 for m in kept]
        ids = self.memory.add_many(items) if items else []
        return {"results": [{"id": str(i), "memory": m["content"], "event": "ADD", "actor_id": m.get("name"), "role": m["role"]}
                            for i, m in zip(ids, kept)]}

    def _offline(self) -> bool:
        """Whether the native chat model is the offline rules provider (no llm configured, none set by the caller)."""
        from ..llm.rules import RulesProvider

        return isinstance(self.memory.llm, RulesProvider)

    def _add_procedure(self, said: list[dict[str, Any]], metadata: dict[str, Any] | None,
                       common: dict[str, Any]) -> dict[str, Any]:
        """mem0's procedural memory: ONE memory, a summary of the whole procedure, with metadata memory_type
        "procedural_memory", and one ADD. The configured model writes the summary; offline (the rules provider) it
        is the messages' steps in order, numbered, as said: a degraded summary, never a made-up one."""
        summary = procedure_summary(said, None if self._offline() else self.memory.llm)
        meta = {**(metadata or {}), "memory_type": "procedural_memory"}
        (memory_id,) = self.memory.add_many([{"messages": summary, "metadata": meta, **common}])
        return {"results": [{"id": str(memory_id), "memory": summary, "event": "ADD"}]}

    def _added(self, memory_id: int, owner: str) -> dict[str, Any]:
        return {"id": str(memory_id), "memory": self.memory.get(memory_id, owner).text, "event": "ADD"}

    def update(self, memory_id: Any, text: str | None = None, metadata: dict[str, Any] | None = None,
               expiration_date: Any = _UNSET, data: str | None = None) -> dict[str, str]:
        """Replace a memory's text and/or merge metadata (history kept). `data` is mem0's older name for text."""
        text = data if text is None else text
        if text is None and metadata is None and expiration_date is _UNSET:
            raise InvalidInput("At least one of text, metadata, or expiration_date must be provided.")
        record, owner = self._record(memory_id)
        meta = _callers(metadata, S.IMMUTABLE_KEYS, "update")  # fixed at creation, as mem0's
        until = None if expiration_date is _UNSET else S.NEVER if expiration_date is None else \
            S.expiration_date(expiration_date)
        self.memory.update(record.id, record.text if text is None else text, user_id=owner, metadata=meta or None,
                           expires_at=until)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: Any) -> dict[str, str]:
        """Delete one memory by id (its history stays)."""
        record, owner = self._record(memory_id)
        self.memory.delete(record.id, owner)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> dict[str, str]:
        """Delete every memory of the named user, narrowed to an agent and/or a run (history stays)."""
        user, agent, run = (S.entity_id(v, n) for v, n in ((user_id, "user_id"), (agent_id, "agent_id"), (run_id, "run_id")))
        if not (user or agent or run):
            raise InvalidInput("At least one filter is required to delete all memories. If you want to delete all "
                               "memories, use the `reset()` method.")
        narrow = {k: v for k, v in (("agent_id", agent), ("run_id", run)) if v} or None
        for owner in [user] if user else self.memory.user_ids():  # else every user's of that agent or run, as mem0's
            ids = [r.id for r in self.memory.iter_all(owner, filters=narrow, include_expired=True)]
            self._delete_ids(ids, owner)
        return {"message": "Memories deleted successfully!"}

    def batch_update(self, memories: Sequence[dict[str, Any]]) -> dict[str, str]:
        """mem0's batch_update: [{"memory_id", "text"?, "metadata"?}], up to 1,000; every id checked before any change."""
        items = _batch(memories, "batch_update", ("memory_id", "text", "metadata"))
        items = [{**i, "metadata": _callers(i.get("metadata"), S.IMMUTABLE_KEYS, "batch_update")} for i in items]
        found = [self._record(i["memory_id"]) for i in items]
        by_owner: dict[str, list[dict[str, Any]]] = {}
        for item, (record, owner) in zip(items, found):
            if item.get("text") is None and item.get("metadata") is None:
                raise InvalidInput(f"batch_update: memory {item['memory_id']} needs a text or metadata")
            by_owner.setdefault(owner, []).append({"memory_id": record.id, "text": item.get("text") or record.text,
                                                   **({"metadata": item["metadata"]} if item.get("metadata") else {})})
        done = 0
        for owner, group in by_owner.items():
            result = self.memory.update_many(group, owner)
            bad = [f"{r.id}: {r.error}" for r in result.results if r.status not in ("ok", "unchanged")]
            if bad:
                raise InvalidInput(f"batch_update: {len(bad)} not updated ({'; '.join(bad)[:300]})")
            done += len(group)
        return {"message": f"Successfully updated {done} memories"}

    def batch_delete(self, memories: Sequence[dict[str, Any]]) -> dict[str, str]:
        """mem0's batch_delete: [{"memory_id"}], up to 1,000; every id checked before any is deleted."""
        items = _batch(memories, "batch_delete", ("memory_id",))
        found = [self._record(i["memory_id"]) for i in items]
        by_owner: dict[str, list[int]] = {}
        for record, owner in found:
            by_owner.setdefault(owner, []).append(record.id)
        for owner, ids in by_owner.items():
            self._delete_ids(ids, owner)
        return {"message": f"Successfully deleted {len({r.id for r, _ in found})} memories"}

    def _delete_ids(self, ids: list[int], owner: str) -> None:
        for start in range(0, len(ids), _MAX_BATCH):
            result = self.memory.delete_many(ids[start:start + _MAX_BATCH], owner)
            for memory_id in result.skipped_core:  # a batch never deletes a core memory; mem0's delete does
                self.memory.delete(memory_id, owner)

    def reset(self) -> None:
        """Erase every memory and its history, of every user: mem0's reset of the whole store."""
        for user in self.memory.user_ids(reserved=True):  # the adapters' rows too: a reset of the whole store
            self.memory.reset(user)

    # ------------------------------------------------------------------ reading
    def search(self, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None, threshold: float = 0.1,
               rerank: bool = False, explain: bool = False, reference_date: Any = None, show_expired: bool = False,
               **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
        """The best `top_k` memories of the user (and agent or run) that `filters` names, whose score is at least
        `threshold`, best first. `rerank` changes nothing here (no reranker is configured); `reference_date` (the
        Platform's "search as of") is refused, as mem0's open-source Memory refuses it."""
        if reference_date is not None:
            raise InvalidInput("The reference_date parameter is not supported by the OSS Memory SDK (nor by "
                               "hippocampus.compat.mem0): search reads the memories as they are now")
        _no_top_level_ids(kwargs, "search")
        _check_top_k(top_k)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise InvalidInput(f"threshold must be a number in [0, 1], got {threshold!r}")
        owner, native = S.split_filters(filters)
        hits = []
        for user in self._owners(owner, native, bool(show_expired)):
            found = self.memory.search(query, user, limit=top_k, filters=native, memory_types=KINDS,
                                       include_expired=bool(show_expired))
            hits += [(hit, hit.similarity if hit.similarity is not None else hit.score) for hit in found.all]
        # Best first by the score mem0's caller sees, as mem0 answers (and several users' hits merged): the native
        # ranking picks which top_k memories answer, the shown score orders them.
        hits.sort(key=lambda h: -h[1])
        out = []
        for hit, score in hits:
            if score >= threshold:
                row = S.item(hit.memory, round(float(score), 6), with_score=True)
                if explain:
                    row["score_details"] = S.score_details(hit, score)
                out.append(row)
        return {"results": out[:top_k]}

    def get(self, memory_id: Any) -> dict[str, Any] | None:
        """One memory by id as mem0's dict, or None when no memory has it."""
        try:
            record, _ = self._record(memory_id)
        except (MemoryNotFound, InvalidInput):  # also an id that can name no memory ("non-existent-id"), as in mem0
            return None
        return S.item(record, None, with_score=True)

    def get_all(self, *, filters: dict[str, Any] | None = None, top_k: int = 20, show_expired: bool = False,
                **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
        """Up to `top_k` memories of the user (and agent or run) that `filters` names, oldest first."""
        _no_top_level_ids(kwargs, "get_all")
        _check_top_k(top_k)
        owner, native = S.split_filters(filters)
        found = [r for user in self._owners(owner, native, bool(show_expired))
                 for r in self.memory.page(user, None, offset=0, limit=top_k, filters=native, include_expired=bool(show_expired)).items]
        found.sort(key=lambda r: (r.ts, r.id))  # oldest first across users, as one user's page is
        return {"results": [S.item(r) for r in found[:top_k]]}

    def history(self, memory_id: Any) -> list[dict[str, Any]]:
        """Every change to a memory, oldest first, as mem0's history rows; also after it was deleted."""
        try:
            native_id = S.memory_id(memory_id)
        except InvalidInput:  # an id that can name no memory has no changes, as in mem0
            return []
        owner = self.memory.owner_of(native_id)
        if owner is None:
            return []
        events = self.memory.history(native_id, owner)
        said = S.said_by(events, self.get(native_id))
        return [S.history_item(e, said) for e in events if e.action not in S.NOT_MEM0_EVENTS]

    # ------------------------------------------------------------------ helpers
    def _record(self, memory_id: Any) -> tuple[MemoryRecord, str]:
        try:
            native_id = S.memory_id(memory_id)
        except InvalidInput:  # an id that can name no memory ("mem_123"): not found, as mem0 says
            raise MemoryNotFound(f"Memory with id {memory_id} not found") from None
        owner = self.memory.owner_of(native_id)
        try:
            if owner is not None:
                return self.memory.get(native_id, owner), owner
        except NotFound:
            pass
        raise MemoryNotFound(f"Memory with id {memory_id} not found")

    def _owners(self, user: str | None, native: dict[str, Any] | None = None, expired: bool = True) -> list[str]:
        """The native users a call reads: its user, else every user of the store (the adapters' reserved ids
        aside) holding a memory the filter matches. The library keeps memories per user, so mem0's scope by agent or
        run alone is one cheap query per user; only the users it finds are searched (an embedding each)."""
        if user is not None:
            return [user]
        return [u for u in self.memory.user_ids() if _any(self.memory.iter_all(u, filters=native, include_expired=expired))]


def _any(records: Iterator[MemoryRecord]) -> bool:
    """Whether a native iterator yields a record: its first page only, then closed."""
    try:
        return next(records, None) is not None
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()


def _callers(metadata: Any, refused: tuple[str, ...], verb: str) -> dict[str, Any] | None:
    """The caller's metadata without the keys mem0 sets itself: dropped with a warning, as mem0 drops them. A key the
    library writes itself (`time`, `context`, `said_at`, ...) is refused: it could be neither kept nor shown."""
    if not isinstance(metadata, dict):
        return metadata  # None, or a wrong type the native call refuses by name
    taken = sorted(k for k in metadata if k in S.LIBRARY_ONLY)
    if taken:
        raise InvalidInput(f"metadata keys {taken} are written by Hippocampus itself; use other names (docs/mem0.md)")
    dropped = [k for k in metadata if k in refused]
    if dropped:
        warnings.warn(f"hippocampus.compat.mem0: metadata keys {dropped} are ignored by {verb}() (set by mem0 itself: "
                      "pass user_id / agent_id / run_id as arguments; actor_id and role come from the messages)",
                      stacklevel=3)
    return {k: v for k, v in metadata.items() if k not in dropped}


def _batch(memories: Any, verb: str, allowed: tuple[str, ...]) -> list[dict[str, Any]]:
    if not isinstance(memories, (list, tuple)) or not memories or len(memories) > _MAX_BATCH:
        raise InvalidInput(f"{verb} takes a list of 1 to {_MAX_BATCH} dicts, each with a memory_id")
    for m in memories:
        if not isinstance(m, dict) or "memory_id" not in m or set(m) - set(allowed):
            raise InvalidInput(f"{verb}: each item is a dict with {', '.join(allowed)}; got {m!r}"[:200])
        S.memory_id(m["memory_id"])
    if len({str(m["memory_id"]) for m in memories}) != len(memories):
        raise InvalidInput(f"{verb}: a memory_id is given twice")
    return list(memories)


def _no_top_level_ids(kwargs: dict[str, Any], verb: str) -> None:
    named = [k for k in S.ENTITY_KEYS if k in kwargs]
    if named:
        raise InvalidInput(f"Top-level entity parameters {named} are not supported in {verb}(). Use filters="
                           f"{{'{named[0]}': '...'}} instead.")
    if kwargs:
        raise InvalidInput(f"{verb}() got unexpected keyword arguments {sorted(kwargs)}")


def _check_top_k(top_k: Any) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise InvalidInput(f"top_k must be an integer from 1 to 1000, got {top_k!r}")


class AsyncMemory:
    """mem0's AsyncMemory: the same calls awaited, each run in a worker thread (anyio.to_thread) so the event loop
    never waits on the store or the embedder. `AsyncMemory(memory=m)` wraps an open hippocampus.Memory."""

    def __init__(self, config: Any = None, *, memory: NativeMemory | None = None, **native: Any):
        self.sync = Memory(config, memory=memory, **native)

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> AsyncMemory:
        return cls(config_dict)

    async def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(functools.partial(getattr(self.sync, name), *args, **kwargs))

    async def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        return await self._run("add", messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
        return await self._run("search", query, **kwargs)

    async def get(self, memory_id: Any) -> dict[str, Any] | None:
        return await self._run("get", memory_id)

    async def get_all(self, **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
        return await self._run("get_all", **kwargs)

    async def update(self, memory_id: Any, *args: Any, **kwargs: Any) -> dict[str, str]:
        return await self._run("update", memory_id, *args, **kwargs)

    async def delete(self, memory_id: Any) -> dict[str, str]:
        return await self._run("delete", memory_id)

    async def delete_all(self, **kwargs: Any) -> dict[str, str]:
        return await self._run("delete_all", **kwargs)

    async def history(self, memory_id: Any) -> list[dict[str, Any]]:
        return await self._run("history", memory_id)

    async def batch_update(self, memories: Sequence[dict[str, Any]]) -> dict[str, str]:
        return await self._run("batch_update", memories)

    async def batch_delete(self, memories: Sequence[dict[str, Any]]) -> dict[str, str]:
        return await self._run("batch_delete", memories)

    async def reset(self) -> None:
        await self._run("reset")

    def close(self) -> None:
        self.sync.close()
