"""Memory: the public facade. It validates, orchestrates and records history;
storage, embeddings, retrieval and the processors each live in their own module."""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterator, Sequence

from pydantic import ValidationError

from . import validation as V
from .config import MemoryConfig
from .embeddings import Embedder, make_embedder
from .errors import ConfigError, InvalidInput, NotFound
from .browse_verbs import BrowseVerbs
from .graph_verbs import GraphVerbs
from .lifecycle.decay import forgotten_row
from .lifecycle_verbs import LifecycleVerbs
from .llm import ChatModel
from .models import (
    AddResult,
    ConsolidationStats,
    HistoryAction,
    HistoryEvent,
    MemoryRecord,
    MemoryPage,
    MemoryType,
    SearchResult,
    now_ts,
)
from .removal import remove_with_history
from .retrieval import RetrievalParams, Retriever, check_search_mode
from .store import MEMORY_FIELDS, MilvusStore
from .store import filters as F
from .transfer_verbs import TransferVerbs
from .undo_verbs import UndoVerbs
from .writes import Writer, plain_row

log = logging.getLogger(__name__)


def load_config(config: MemoryConfig | None = None, **overrides: Any) -> MemoryConfig:
    """Settings with keyword overrides on top; any invalid value becomes a ConfigError."""
    try:
        if config is None:
            return MemoryConfig(**overrides)
        return MemoryConfig(**{**config.model_dump(exclude_unset=True), **overrides}) if overrides else config
    except ValidationError as exc:
        raise ConfigError(str(exc)) from exc


class Memory(LifecycleVerbs, TransferVerbs, BrowseVerbs, UndoVerbs, GraphVerbs):
    """Long-term memory for one agent deployment, many users.

    >>> with Memory(milvus_uri="./demo.db") as memory:
    ...     memory.add("I moved to Berlin in May", user_id="alice", infer=False)
    ...     memory.search("where does alice live?", user_id="alice")
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        embedder: Embedder | None = None,
        llm: ChatModel | None = None,
        **overrides: Any,
    ):
        """Open (or create) the store that `config` names.

        `config` is a MemoryConfig (default: read from HIPPOCAMPUS_* environment variables and
        config.yaml); keyword `overrides` are MemoryConfig fields set on top of it for this instance,
        e.g. `Memory(milvus_uri="./demo.db", k_episodic=5)`. `embedder` and `llm` replace the
        configured embedding model and chat model (tests, custom providers).

        Raises ConfigError for an unknown or invalid setting; StoreLockedError when another process
        holds a milvus-lite path; SchemaMismatchError when the store was made with another embedder
        or dimension; StoreCorruptedError / StoreError when the store cannot be opened.
        """
        self.config = load_config(config, **overrides)
        self.embedder = embedder or make_embedder(self.config)
        self._llm = llm
        self.store = MilvusStore(
            uri=self.config.milvus_uri,
            dim=self.embedder.dim,
            embedding_model=self.embedder.model_name,
            collection=self.config.collection_name,
            token=self.config.milvus_token.get_secret_value() if self.config.milvus_token else None,
        )
        self.retriever = Retriever(self.store, self.embedder, RetrievalParams.from_config(self.config))
        self._write_lock = threading.Lock()
        self._writes = Writer(self.store, self.embedder, self._write_lock)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Release the store (and milvus-lite's directory lock). Raises nothing; closing twice is harmless."""
        self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def add(
        self,
        messages: str | list[dict[str, str]],
        user_id: str,
        chat_id: str = "default",
        who: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        infer: bool = False,
        ts: Any = None,
        memory_type: MemoryType | str = MemoryType.EPISODIC,
    ) -> AddResult:
        """Remember a turn. With `infer=False` the text is stored as-is as one memory; with `infer=True`
        the rules gate or the WriteDecider (one LLM call) decides whether and what to store; a deferred
        decision or a failed LLM keeps the turn raw, marked `pending_decision` (see decide_pending).

        Raises InvalidInput before anything is written for a bad argument, or for metadata that sets
        a key the library owns (`created_at`, `updated_at`, `pending_decision`, ...: see
        validation.OWNED_KEYS); EmbeddingError / StoreError when embedding or writing fails. An LLM
        failure is not raised: the turn is kept raw."""
        user_id = V.check_id("user_id", user_id)
        chat_id = V.check_id("chat_id", chat_id)
        who = V.check_id("who", who if who is not None else user_id, V.WHO_MAX)
        metadata = V.check_caller_metadata(metadata)
        event_ts = V.event_ts(ts)
        mtype = V.check_memory_type(memory_type) or MemoryType.EPISODIC
        text, turns = V.messages_to_text(messages)
        if infer and mtype is MemoryType.EPISODIC:
            from .online import add_inferred

            return add_inferred(self._writes, lambda: self.llm, self.config, user_id, chat_id, who, metadata, event_ts, text, turns)
        ids = self._writes.insert([plain_row(user_id, mtype, event_ts, chat_id, who, text, metadata)], actor="api")
        return AddResult(ids=ids, stored=True, reason="stored without inference (infer=False)")

    def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """Store many turns as-is (infer=False), embedding them in batches: bulk import and benchmarks.

        Each item holds `messages` (or `text`), `user_id` and optionally `chat_id`, `who`, `metadata`,
        `ts`, `memory_type`, as for `add`. Every item is validated before anything is written; the
        ids come back in input order.

        Raises InvalidInput (naming the bad item's field) before anything is written, as `add` does;
        EmbeddingError / StoreError when embedding or writing fails."""
        rows = []
        for item in items:
            if not isinstance(item, dict):
                raise InvalidInput(f"add_many takes dicts, got {type(item).__name__}")
            user_id = V.check_id("user_id", item.get("user_id"))
            chat_id = V.check_id("chat_id", item.get("chat_id", "default"))
            who = V.check_id("who", item.get("who") or user_id, V.WHO_MAX)
            metadata = V.check_caller_metadata(item.get("metadata"))
            event_ts = V.event_ts(item.get("ts"))
            mtype = V.check_memory_type(item.get("memory_type")) or MemoryType.EPISODIC
            text, _turns = V.messages_to_text(item.get("messages", item.get("text")))
            rows.append(plain_row(user_id, mtype, event_ts, chat_id, who, text, metadata))
        ids: list[int] = []
        for start in range(0, len(rows), max(1, batch_size)):
            ids += self._writes.insert(rows[start : start + batch_size], actor="api")
        return ids

    def update(self, memory_id: int, text: str, user_id: str, metadata: dict[str, Any] | None = None) -> MemoryRecord:
        """Replace a memory's text (re-embedded) and merge `metadata` into it; the id stays and the
        old text goes to history.

        Raises InvalidInput for a bad argument or a library-owned metadata key (as `add`); NotFound
        when the memory is missing or another user's; EmbeddingError / StoreError on failure."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        text = V.check_text(text)
        extra = V.check_caller_metadata(metadata)
        old = self.get(memory_id, user_id=user_id)
        new_meta = {**old.metadata, **extra, "updated_at": now_ts()}
        if extra:  # old and new keys together stay within a limit
            V.check_stored_metadata(new_meta)
        if old.memory_type is MemoryType.EPISODIC and "thing" in old.metadata and "thing" not in extra:
            new_meta["thing"] = text
        return self._writes.rewrite(old, text, new_meta, HistoryAction.UPDATED, actor="api")

    def delete(self, memory_id: int, user_id: str) -> None:
        """Delete one memory of this user; its history stays and keeps the row (`undo` brings it back).

        Raises InvalidInput for a bad id; NotFound when the memory is missing or another user's
        (also when a concurrent delete won); StoreError on failure."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        with self._write_lock:  # the history event first, then the row (removal.py): never a row gone without it
            old = self.get(memory_id, user_id=user_id)  # under the lock: a racing delete has either won or not started
            event = HistoryEvent(memory_id=old.id, user_id=user_id, action=HistoryAction.DELETED, old_text=old.text,
                                 actor="api", details={"row": forgotten_row(old)})
            remove_with_history(self.store, [event.model_dump(mode="json")],
                                F.and_(F.eq("id", memory_id), F.eq("user_id", user_id)), [memory_id])

    def reset(self, user_id: str) -> int:
        """Erase every memory of this user and its history, for good; returns how many memories went.

        Raises InvalidInput for a bad user_id; StoreError on failure."""
        user_id = V.check_id("user_id", user_id)
        scope = F.eq("user_id", user_id)
        with self._write_lock:
            count = self.store.count(scope)
            self.store.delete(scope)
            self.store.delete_history(scope)
        return count

    # ------------------------------------------------------------------ reading
    def search(
        self,
        query: str,
        user_id: str,
        limit: int | None = None,
        memory_type: MemoryType | str | None = None,
        filters: dict[str, Any] | None = None,
        mode: str | None = None,
        include_superseded: bool = False,
        memory_types: Sequence[MemoryType | str] | None = None,
        graph: bool | None = None,
    ) -> SearchResult:
        """Up to k_episodic episodic and k_semantic semantic memories, each list best first;
        procedural memories (k_procedural) only when `memory_type` or `memory_types` names them.

        `limit` caps every list at once; `memory_type` restricts to one kind, `memory_types` to several;
        `filters` match exactly: chat_id, who, memory_type, category, state, or metadata.<key> (a bare
        key that some memory of the user has in its metadata also works; README "Filters"); `mode` (hybrid, dense, bm25) overrides
        config.search_mode for this call. Without a working embedder BM25 serves alone. Facts that
        a newer one superseded are left out unless `include_superseded`. `graph` asks for the graph
        stage (memories linked through the user's entities and triples) or not; None: config `graph`.

        Raises InvalidInput for a bad argument (empty query, unknown memory_type or mode, both
        memory_type and memory_types, limit outside 0..1000, filters that are not a JSON object or name an unknown field);
        StoreError on failure. An embedder
        failure is not raised: BM25 answers instead.
        """
        query = V.check_text(query, "query")
        user_id = V.check_id("user_id", user_id)
        metadata = V.check_metadata(filters, "filters")
        if memory_type is None and not memory_types and isinstance(metadata.get("memory_type"), str):
            memory_type = metadata["memory_type"]  # filters={"memory_type": "procedural"} picks the kind searched
        kinds = V.check_memory_types(memory_type, memory_types)
        limit = V.check_limit(limit) if limit is not None else None
        caller = self.retriever.caller_filter(user_id, metadata)  # store/filters.py: the fields and their rule
        if graph is not None and not isinstance(graph, bool):
            raise InvalidInput(f"graph must be true, false or None, got {graph!r}")
        mode = check_search_mode(mode) if mode is not None else self.config.search_mode
        vector = self.retriever.encode_query(query, mode)  # None: BM25 serves (bm25 mode or embedder down)
        mode = mode if vector is not None else "bm25"
        result = SearchResult()
        for kind in kinds:
            k = getattr(self.config, f"k_{kind.value}") if limit is None else limit
            setattr(result, kind.value, self.retriever.search(query, user_id, k, kind, caller, vector, mode,
                                                              include_superseded=bool(include_superseded), graph=graph))
        return result

    def get(self, memory_id: int, user_id: str) -> MemoryRecord:
        """One memory of this user.

        Raises InvalidInput for a bad id; NotFound when it is missing or another user's (the same
        answer for both); StoreError on failure."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        rows = self.store.query(F.and_(F.eq("id", memory_id), F.eq("user_id", user_id)), limit=1)
        if not rows:
            raise NotFound(f"memory {memory_id} not found for this user")
        return MemoryRecord.from_row(rows[0])

    def get_all(self, user_id: str, memory_type: MemoryType | str | None = None) -> list[MemoryRecord]:
        """Every memory of this user, oldest event first; paged internally, never capped.

        Raises InvalidInput for a bad user_id or memory_type; StoreError on failure."""
        return sorted(self.iter_all(user_id, memory_type), key=lambda r: (r.ts, r.id))

    def page(self, user_id: str, memory_type: MemoryType | str | None = None, offset: int = 0, limit: int = 100) -> MemoryPage:
        """A page of `get_all`: what a service or a UI lists without sending every memory at once.

        Raises InvalidInput for a bad user_id, memory_type, offset (< 0) or limit (outside 0..1000);
        StoreError on failure."""
        offset = V.check_offset(offset)
        limit = V.check_limit(limit)
        records = self.get_all(user_id, memory_type)
        end = offset + limit
        return MemoryPage(items=records[offset:end], total=len(records), offset=offset,
                          next_offset=end if end < len(records) else None)

    def iter_all(self, user_id: str, memory_type: MemoryType | str | None = None) -> Iterator[MemoryRecord]:
        """Every memory of this user, a page at a time from the store, in no particular order
        (`get_all` sorts them); for exports too large to hold at once.

        Raises InvalidInput for a bad user_id or memory_type (on the first `next`, as a generator
        does); StoreError on failure."""
        user_id = V.check_id("user_id", user_id)
        mtype = V.check_memory_type(memory_type)
        scope = F.and_(F.eq("user_id", user_id), F.eq("memory_type", mtype.value) if mtype else None)
        for page in self.store.iterate(scope, MEMORY_FIELDS):
            for row in page:
                yield MemoryRecord.from_row(row)

    def history(self, memory_id: int, user_id: str) -> list[HistoryEvent]:
        """Every change to this memory, oldest first; kept after the memory is deleted or merged.

        Raises InvalidInput for a bad id; NotFound when there is no history for this user (never
        existed, or another user's); StoreError on failure."""
        memory_id = V.check_memory_id(memory_id)
        user_id = V.check_id("user_id", user_id)
        rows = self.store.history(F.and_(F.eq("memory_id", memory_id), F.eq("user_id", user_id)))
        if not rows:  # never existed for this user, or another user's id: the same answer as get()
            raise NotFound(f"no history for memory {memory_id} for this user")
        return [HistoryEvent.model_validate(r) for r in rows]

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """How many memories there are ("total", "episodic", "semantic"), for one user or, with
        user_id None, the whole store; plus the store's URI and the embedder's name.

        Raises InvalidInput for a bad user_id; StoreError on failure."""
        scope = F.eq("user_id", V.check_id("user_id", user_id)) if user_id is not None else ""
        out: dict[str, Any] = {"total": self.store.count(scope)}
        for mtype in MemoryType:
            out[mtype.value] = self.store.count(F.and_(scope, F.eq("memory_type", mtype.value)))
        out["store"] = self.config.milvus_uri
        out["embedder"] = self.embedder.model_name
        return out

    # ------------------------------------------------------------------ consolidation
    def consolidate(self, user_id: str | None = None, progress: Any = None) -> ConsolidationStats:
        """Offline consolidation: retry pending decisions, distil facts, merge or separate similar
        episodes, mark older facts that new ones contradict as superseded (newest wins; the old
        stays in history and `search(include_superseded=True)`), compress facts over 30 / 90 days old
        (lifecycle/compress.py) and decay (`decay`; neither with decay_preset off), then with `graph: on`
        read new memories into the graph (`build_graph`), for all users when
        user_id is None. The job lives in consolidation/job.py; `progress(phase, done, total)` is called as it goes.

        Raises InvalidInput for a bad user_id; StoreError / EmbeddingError when the store or the
        embedder fails. An LLM failure is not raised: it is counted in the returned stats' `errors`
        and the memory is left for the next run."""
        from .consolidation.job import ConsolidationJob
        from .lifecycle.compress import run_compress
        from .lifecycle.policy import decay_table
        from .lifecycle.supersede import run_supersede
        from .processors.compressor import FactCompressor
        from .processors.contradiction import ContradictionJudge

        user_id = V.check_id("user_id", user_id) if user_id is not None else None
        job = ConsolidationJob(self.store, self.embedder, self.llm, self.config, write_lock=self._write_lock)
        stats = job.run(user_id, progress)
        sup = run_supersede(self.store, self._write_lock, lambda: ContradictionJudge(self.llm, self.config.prompts_dir),
                            user_id, now_ts(), decay_table(self.config.decay_preset))
        stats.superseded, stats.llm_calls, stats.errors = sup.superseded, stats.llm_calls + sup.llm_calls, stats.errors + sup.errors
        if self.config.decay_preset != "off":
            comp = run_compress(self.store, self.embedder, self._write_lock, lambda: FactCompressor(self.llm, self.config.prompts_dir),
                                user_id, now_ts())
            stats.compressed, stats.llm_calls, stats.errors = comp.compressed, stats.llm_calls + comp.llm_calls, stats.errors + comp.errors
            aged = self.decay(user_id, progress=progress)
            stats.archived, stats.forgotten, stats.promoted = aged.archived, aged.forgotten, aged.promoted
        if self.config.graph == "on":  # last: what merging, superseding and forgetting left is what it reads
            built = self.build_graph(user_id, progress=progress)
            stats.graph_read, stats.llm_calls, stats.errors = built.memories_read, stats.llm_calls + built.llm_calls, stats.errors + built.errors
        return stats

    def decide_pending(self, user_id: str | None = None, limit: int | None = None) -> int:
        """Decide now the turns kept raw with `pending_decision` (write_decision: deferred, or a failed
        model), at most `limit` of them: consolidation's pending phase alone, for a background worker.
        Returns how many were decided (kept, rewritten or removed); a failure leaves a turn pending.

        Raises InvalidInput for a bad user_id or limit; StoreError on failure. An LLM failure is not
        raised: the turn stays pending."""
        from .consolidation.job import ConsolidationJob

        user_id = V.check_id("user_id", user_id) if user_id is not None else None
        limit = V.check_limit(limit) if limit is not None else None
        job = ConsolidationJob(self.store, self.embedder, self.llm, self.config, write_lock=self._write_lock)
        return job.decide_pending(user_id, limit).pending_decided

    @property
    def llm(self) -> ChatModel:
        """The configured ChatModel, created on first use (the rules provider when offline).

        Raises ConfigError when the configured provider cannot be made (e.g. a missing API key)."""
        if self._llm is None:
            from .llm.factory import make_llm

            self._llm = make_llm(self.config)
        return self._llm

    @llm.setter
    def llm(self, model: ChatModel) -> None:
        """Swap the ChatModel (a service wraps it to count calls; tests script it)."""
        self._llm = model
