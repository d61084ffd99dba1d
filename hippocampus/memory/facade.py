"""Memory: the public facade. Every public verb is a one-line delegate to the service of its concern
(memory/records.py, memory/observe.py, memory/browse.py, memory/undo.py, lifecycle/, transfer/, graph/,
consolidation/), each built here on first use over one MemoryContext (context.py) and handed what it calls by name.
The docstrings stay here: they are the API's (verbs.py and tests/test_verb_parity.py read them). The verbs whose
parameters are one request model (contract/requests.py: add, ...) are functions of memory/requested.py, which
`python scripts/verbs.py --write` generates from the models, taken here as methods."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from .. import validation as V
from ..config import MemoryConfig
from ..context import MemoryContext
from ..contract.replies import BatchDeleteResult, BatchUpdateResult, GraphStats, GraphView, ImportReport
from ..contract.verbs import VERBS, register_facade
from ..embeddings import Embedder, make_embedder
from ..errors import ConfigError
from ..llm import ChatModel
from ..models import (
    ConsolidationStats,
    DecayStats,
    HistoryEvent,
    MemoryRecord,
    Progress,
    UndoResult,
)
from ..observability.tracing import instrument
from . import requested, services
from .records import RecordService
from .services import made_on_first_use

if TYPE_CHECKING:  # the services a verb needs are imported when it is first called (a CLI `list` loads none of them)
    from .browse import Overview


def load_config(config: MemoryConfig | None = None, **overrides: Any) -> MemoryConfig:
    """Settings with keyword overrides on top; any invalid value becomes a ConfigError."""
    try:
        if config is None:
            return MemoryConfig(**overrides)
        return MemoryConfig(**{**config.model_dump(exclude_unset=True), **overrides}) if overrides else config
    except ValidationError as exc:
        raise ConfigError(str(exc)) from exc


class Memory:
    """Long-term memory for one agent deployment, many users.

    ```python
    from hippocampus import Memory

    with Memory(milvus_uri="./demo.db") as memory:  # the store: a directory here, made on the first write
        memory.add("I moved to Berlin in May", user_id="alice")
        print(memory.search("where does alice live?", user_id="alice").all[0].memory.text)  # I moved to Berlin in May
    ```
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
        hippocampus.yaml); keyword `overrides` are MemoryConfig fields set on top of it for this instance,
        e.g. `Memory(milvus_uri="./demo.db", k_episodic=5)`. `embedder` and `llm` replace the
        configured embedding model and chat model (tests, custom providers).

        Raises ConfigError for an unknown or invalid setting; StoreLockedError when another process
        holds a milvus-lite path; SchemaMismatchError when the store was made with another embedder
        or dimension; StoreCorruptedError / StoreError when the store cannot be opened.
        """
        config = load_config(config, **overrides)
        self.ctx = ctx = MemoryContext.open(config, embedder or make_embedder(config), llm)
        self.store, self.embedder, self.retriever = ctx.store, ctx.embedder, ctx.retriever
        self._records = RecordService(ctx)

    # ------------------------------------------------------------------ the other services, made on first use
    _hook = made_on_first_use(services.hook)
    _lifecycle = made_on_first_use(services.lifecycle)
    _transfer = made_on_first_use(services.transfer)
    _browse = made_on_first_use(services.browse)
    _batch = made_on_first_use(services.batch)
    _undo = made_on_first_use(services.undo)
    _graph = made_on_first_use(services.graph)
    _consolidation = made_on_first_use(services.consolidation)

    # ------------------------------------------------------------------ the shared state, for tests and services
    @property
    def config(self) -> MemoryConfig:
        """The settings every service reads (one object: the context's). Raises nothing."""
        return self.ctx.config

    @config.setter
    def config(self, config: MemoryConfig) -> None:
        """Replace the settings for every service at once (e.g. k_episodic for one search)."""
        self.ctx.config = config

    @property
    def llm(self) -> ChatModel:
        """The configured ChatModel, created on first use (the rules provider when offline).

        Raises ConfigError when the configured provider cannot be made (e.g. a missing API key)."""
        return self.ctx.llm

    @llm.setter
    def llm(self, model: ChatModel) -> None:
        """Swap the ChatModel (a service wraps it to count calls; tests script it)."""
        self.ctx.llm = model

    @contextmanager
    def override(self, *, llm: ChatModel) -> Iterator[Memory]:
        """Answer every LLM call inside the block with `llm`, then restore the model that was there, also
        when the block raises: a test scripts one step without rebuilding its Memory, as pydantic-ai's
        `Agent.override` does. Raises nothing itself.

        ```python
        with memory.override(llm=ScriptedChatModel(replies={"WriteDecision": {"write_episodic": False}})):
            memory.add("hello", user_id="u", infer=True)
        ```"""
        with self.ctx.override(llm=llm):
            yield self

    # ------------------------------------------------------------------ lifecycle of the object
    def close(self) -> None:
        """Release the store (and milvus-lite's directory lock). Raises nothing; closing twice is harmless."""
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    add = requested.add  # generated from contract/requests.py's AddRequest (memory/requested.py)

    def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """Store many turns as-is (infer=False), embedding them in batches: bulk import and benchmarks.

        Each item holds `messages` (or `text`), `user_id` and optionally `chat_id`, `who`, `metadata`,
        `ts`, `memory_type`, `expires_at`, `agent_id`, `run_id`, as for `add`. Every item is validated before anything is written; the
        ids come back in input order.

        Raises InvalidInput (naming the bad item's field) before anything is written, as `add` does;
        EmbeddingError / StoreError when embedding or writing fails."""
        return self._records.add_many(items, batch_size)

    update = requested.update  # generated from contract/requests.py's UpdateRequest (memory/requested.py)

    def delete(self, memory_id: int, user_id: str) -> None:
        """Delete one memory of this user; its history stays and keeps the row (`undo` brings it back).

        Raises InvalidInput for a bad id; NotFound when the memory is missing or another user's
        (also when a concurrent delete won); StoreError on failure."""
        return self._records.delete(memory_id, user_id)

    def update_many(self, items: Sequence[dict[str, Any]], user_id: str) -> BatchUpdateResult:
        """Update up to 1,000 memories of this user, each item {memory_id, text, metadata?, expires_at?} as
        `update` does (history per item, so `undo` reverses one), with a result per item: ok, not_found (missing
        or another user's), unchanged, invalid, or failed (the store or embedder failed on it; the
        others are still applied: not all-or-nothing). memory/batch.py states the semantics.

        Raises InvalidInput, before anything changes, for a bad user_id, more than 1,000 items or any
        malformed or repeated item; StoreError when the memories cannot be read."""
        return self._batch.update_many(items, user_id)

    def delete_many(self, memory_ids: Sequence[Any], user_id: str) -> BatchDeleteResult:
        """Delete up to 1,000 memories of this user at once (history kept, as `delete`), with a result
        per id: ok, not_found (unknown or another user's) or invalid (core and system memories are
        skipped, never deleted by a batch). All the deletable ones go in one step, or none.
        Raises InvalidInput for a bad id or user_id or more than 1,000 ids, before anything is deleted;
        StoreError on failure (nothing deleted)."""
        return self._batch.delete_many(memory_ids, user_id)

    def renew_expiry(self, expiries: dict[Any, Any], user_id: str) -> list[int]:
        """Move the expiry of up to 1,000 memories of this user, {memory_id: expires_at} (as `add` takes it), in
        one write and without a history event or re-embedding: a lease a reader renews, such as a LangGraph
        store's TTL refreshed on read. Returns the ids renewed (missing or another user's are left out).

        Raises InvalidInput, before anything changes, for a bad id, user_id or expiry, or more than 1,000;
        StoreError on failure."""
        return self._batch.renew_expiry(expiries, user_id)

    def reset(self, user_id: str) -> int:
        """Erase every memory of this user and its history, for good; returns how many memories went.

        Raises InvalidInput for a bad user_id; StoreError on failure."""
        return self._records.reset(user_id)

    # ------------------------------------------------------------------ reading
    search = requested.search  # generated from contract/requests.py's SearchRequest (memory/requested.py)

    def get(self, memory_id: int, user_id: str) -> MemoryRecord:
        """One memory of this user.

        Raises InvalidInput for a bad id; NotFound when it is missing or another user's (the same
        answer for both); StoreError on failure."""
        return self._records.get(memory_id, user_id)

    # generated from contract/requests.py's ListRequest, PageRequest and IterRequest (memory/requested.py)
    get_all, page, iter_all = requested.get_all, requested.page, requested.iter_all

    def history(self, memory_id: int, user_id: str) -> list[HistoryEvent]:
        """Every change to this memory, oldest first; kept after the memory is deleted or merged.

        Raises InvalidInput for a bad id; NotFound when there is no history for this user (never
        existed, or another user's); StoreError on failure."""
        return self._records.history(memory_id, user_id)

    def owner_of(self, memory_id: int) -> str | None:
        """The user a memory id belongs to (also after a delete), None when unknown: for faces that name a memory
        by id alone, such as the mem0 drop-in (compat/mem0.py). Raises InvalidInput for a bad id; StoreError."""
        return self._records.owner(memory_id)

    def user_ids(self, *, reserved: bool = False) -> list[str]:
        """Every user of this store (a memory or a history event), sorted; the adapters' reserved ids
        (validation.RESERVED_USERS: an Agents SDK session's items, a LangGraph store's registry) only with
        `reserved=True`. Raises StoreError on failure."""
        return [u for u in self._records.users() if reserved or V.reserved_user(u) is None]

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """How many memories there are ("total", "episodic", "semantic"), for one user or, with
        user_id None, the whole store; where the store keeps cross-language vectors, how many of those
        memories lack one ("without_cross_vector": `hippocampus reembed --crosslang` fills them); plus
        the store's URI and the embedder's name.

        Raises InvalidInput for a bad user_id; StoreError on failure."""
        return self._records.stats(user_id)

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
        return self._consolidation.consolidate(user_id, progress)

    decide_pending = requested.decide_pending  # generated from contract/requests.py's DecidePendingRequest

    # ------------------------------------------------------------------ the chat hook
    def mark_used(self, memory_ids: int | Sequence[int], user_id: str, *, context: str | None = None) -> list[MemoryRecord]:
        """The chat hook reports which recalled memories the answer actually used (a memory that was
        only retrieved does not count as used). Each one's hit_count rises by exactly one (history
        "hit") and its score is reinforced, s + (1 - s) * 0.2, when the use counts (once per 2 hours,
        at most 3 times a day: lifecycle/policy.py); with `context` (the current conversation) each
        episodic one also goes to the Reconsolidator (one LLM call each; history "reconsolidated"; an LLM failure leaves it as it was).
        The offline rules only append the user's clauses that share a word with the memory and add one,
        as "(update: ...)"; they never correct or rewrite it.

        Raises InvalidInput for a bad id, user_id or context; NotFound, before anything changes,
        when an id is unknown or another user's; EmbeddingError / StoreError on failure."""
        return self._hook.mark_used(memory_ids, user_id, context)

    observe = requested.observe  # generated from contract/requests.py's ObserveRequest (memory/requested.py)

    # ------------------------------------------------------------------ lifecycle
    def decay(self, user_id: str | None = None, now: int | None = None, *, progress: Progress | None = None) -> DecayStats:
        """Archive the memories whose score fell below 0.2 (or whose todo date passed) and forget those
        below 0.05 (deleted, the row kept in a "forgotten" history event: see `restore`), for one user
        or all; core and system memories never. The MemoryReviewer looks at what reached 0.9 (promote
        to core or keep) and, with a real model, at what is about to be archived (keep at 0.5, delete,
        promote); offline, names, birthdays and standing preferences are promoted. `now` (epoch seconds) stands in for the clock in
        simulations. Consolidation runs it too, unless `decay_preset` is off.

        Raises InvalidInput for a bad user_id or now; StoreError on failure."""
        return self._lifecycle.decay(user_id, now, progress)

    def last_decay(self) -> int | None:
        """When decay last ran over every user (epoch seconds; kept in the store, so it survives a
        restart), or None when it never has: a service decays at start when this is over a day ago.

        Raises StoreError on failure."""
        return self._lifecycle.last_decay()

    def restore(self, memory_id: int, user_id: str) -> MemoryRecord:
        """Bring back a memory that decay forgot, from its history: the same text, type, times and
        metadata under a new id (recorded both ways in history), active again at score 0.5.

        Raises InvalidInput for a bad id, for a memory that was not forgotten or was restored
        already; NotFound when there is no history for this user; EmbeddingError / StoreError."""
        return self._lifecycle.restore(memory_id, user_id)

    curate = requested.curate  # generated from contract/requests.py's CurateRequest (memory/requested.py)

    context = requested.context  # generated from contract/requests.py's ContextRequest (memory/requested.py)

    # ------------------------------------------------------------------ transfer
    def export_md(self, user_id: str, path: str | os.PathLike[str] | None = None, *, now: int | None = None) -> str:
        """This user's memories as a MEMORY.md (lifecycle/memory_md.py): Active and Archived
        by state, each by score now, highest first. With `path` the file is rewritten whole, the old
        one kept as `<name>.bak`, through a temporary file and a rename. `now` (epoch seconds) stands
        in for the clock. Raises InvalidInput for a bad user_id or now; StoreError; OSError."""
        return self._transfer.export_md(user_id, path, now)

    def import_md(self, user_id: str, text_or_path: str | os.PathLike[str]) -> ImportReport:
        """Bring an edited MEMORY.md back: an entry whose id is one of this user's memories updates
        its text, category, score (as importance, counted from now) and state (its section) where
        they differ (history "updated", actor "import"); an entry written `[new]` or `[]` becomes a
        new memory with that category, score and section (type from its `<!-- type: ... -->` line,
        semantic without one), its text's hash kept in its metadata (`source_hash`) so that importing
        the same file again finds it (`unchanged`) instead of storing it twice. The id, date, hits and
        an existing memory's type are read-only.

        Deleting an entry from the file does NOT delete the memory (use `delete`). An id that is not
        one of this user's memories (deleted, from another store, or another user's: the same answer
        for all, as `get` gives) is skipped with a warning; nothing of another user is touched.
        Damaged entries are skipped with a warning naming their line; everything is checked before
        anything is written. A path is an os.PathLike or a one-line str; a missing file imports
        nothing (a warning says so). Raises InvalidInput for a bad user_id or an unreadable file;
        EmbeddingError / StoreError on failure; never NotFound (a memory deleted meanwhile is skipped)."""
        return self._transfer.import_md(user_id, text_or_path)

    def export_jsonl(self, user_id: str, path: str | os.PathLike[str]) -> int:
        """Back up this user's memories: one JSON line each, every field (metadata and lifecycle
        included) and its history (lifecycle/jsonl.py), oldest event first; written through a
        temporary file and a rename. Returns how many memories. The history of memories already
        deleted or forgotten is not exported. Raises InvalidInput for a bad user_id; StoreError; OSError."""
        return self._transfer.export_jsonl(user_id, path)

    def import_jsonl(self, user_id: str, path: str | os.PathLike[str]) -> ImportReport:
        """Restore a backup (from this store or another) as this user's memories: each line becomes
        a new memory (new id) with every field of the old one (text, type, ts, chat_id, who,
        hit_count, metadata with its lifecycle), its history re-recorded under the new id with the
        original times, then a "created" event (actor "import", details `imported_from`: the old id).
        The `user_id` argument wins over the file's (the data become this user's). Ids inside
        metadata or history details (merged_from_ids, superseded_by, ...) still name the old ids.
        Importing a file again changes nothing: a line whose memory is already here (the same
        content hash, `source_hash`, kept in the new memory's metadata; or the same id with the same
        content) is reported `unchanged`; a line whose id is this user's memory of the same type but
        whose content differs updates that memory (in history, actor "import").

        Every line is checked before anything is written. Raises InvalidInput naming a bad line (and
        nothing changes), or for a bad user_id or an unreadable file; EmbeddingError / StoreError on
        failure (batches already written stay)."""
        return self._transfer.import_jsonl(user_id, path)

    # ------------------------------------------------------------------ browse
    def score_now(self, record: MemoryRecord, now: int | None = None) -> float:
        """A memory's score at `now` (default: the clock), under this store's decay preset: what
        decay compares with its thresholds. Raises nothing (it reads no store)."""
        return self._browse.score_now(record, now)

    browse = requested.browse  # generated from contract/requests.py's BrowseRequest (memory/requested.py)

    def overview(self, user_id: str) -> Overview:
        """Counts by type, category and state, the score histogram and memories written per day.
        Raises InvalidInput for a bad user_id; StoreError on failure."""
        return self._browse.overview(user_id)

    def export_view(self, user_id: str, fmt: Literal["jsonl", "md"] = "jsonl", **filters: Any) -> str:
        """What `browse` lists with these filters (every page, in its order) as JSONL, each memory
        with its history, or as MEMORY.md (Active and Archived by score, as `export_md`).
        Raises InvalidInput for a bad argument or format; StoreError on failure."""
        return self._browse.export_view(user_id, fmt, **filters)

    # ------------------------------------------------------------------ undo
    def undo(self, event_id: int, user_id: str) -> UndoResult:
        """Put back the state from before one history event of this user (`event_id`, as `history`
        lists it): a creation undone deletes the memory; an update (a curate, a reconsolidation, a
        separation) undone puts the old text and fields back, same id; a delete or a forget undone
        brings the row back under a new id (recorded both ways in history); a merge undone removes the
        merged record and brings both sources back (new ids); an archive, a promotion, a supersession
        or a compression undone makes the memory active, of its old category or valid again. The undo
        is recorded in history (actor "undo", details `undo_of`). The result names the memories that
        now hold the state (`memory_ids`) and those removed (`removed_ids`). Facts distilled from the
        memory after the event follow it when the undo changes what the memory says (deleted, rows
        kept in history; the memory is distilled again), unless they changed since, have other
        sources or superseded an older memory: then the undo is refused, saying which event to undo.

        Raises InvalidInput for a bad id or user_id, for an event that cannot be undone (a hit, a
        review, a distillation, a restore, an undo, one whose memory changed after it in anything but
        a use: the message names the later event (id, action, time) to undo first, one undone already, one that kept no copy of what it removed); NotFound when the
        event is unknown or another user's (the same answer for both); EmbeddingError / StoreError."""
        return self._undo.undo(event_id, user_id)

    # ------------------------------------------------------------------ graph
    def build_graph(self, user_id: str | None = None, progress: Any = None) -> GraphStats:
        """Read the memories the extractor has not read yet (of `user_id`, else of every user) into the
        graph: one TripleExtractor call per 8 memories; the offline rules are its degraded mode. A model
        failure leaves that batch for the next build (counted in `errors`).

        Raises InvalidInput for a bad user_id; StoreError / EmbeddingError when the store or the embedder fails."""
        return self._graph.build_graph(user_id, progress)

    def graph(self, user_id: str, limit: int | None = None) -> GraphView:
        """`user_id`'s entities and triples as built so far, at most `limit` of each (all when None).

        Raises InvalidInput for a bad user_id or limit; StoreError on failure."""
        return self._graph.graph(user_id, limit)


register_facade(Memory)  # the verb list (contract/verbs.py) reads its signatures from here
instrument(Memory, {verb.name: verb.writes for verb in VERBS})  # a span per verb when tracing is on
