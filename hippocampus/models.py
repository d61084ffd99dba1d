"""Records at the edges of the library: what callers get back and what the store holds."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

TEXT_MAX_BYTES = 65535  # the longest memory text, in UTF-8 bytes: Milvus's VARCHAR limit for the text field
# How a long job reports as it goes (consolidate, decay, build_graph): progress(phase, done, total).
Progress = Callable[[str, int, int], None]


class MemoryType(str, Enum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"  # a tool-call sequence that worked (task, steps, outcome): recalled only when asked for


class HistoryAction(str, Enum):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"
    MERGED = "merged"
    SEPARATED = "separated"
    RECONSOLIDATED = "reconsolidated"
    DISTILLED = "distilled"
    HIT = "hit"
    ARCHIVED = "archived"
    PROMOTED = "promoted"
    REVIEWED = "reviewed"
    SUPERSEDED = "superseded"
    REACTIVATED = "reactivated"
    FORGOTTEN = "forgotten"
    RESTORED = "restored"
    DECAY_RUN = "decay_run"  # a full decay pass over every user (no memory: memory_id 0, user_id "")
    GRAPH_PRUNED = "graph_pruned"  # graph rows (store/graph.py) deleted with this memory: it was their last support
    COMPRESSED = "compressed"  # a fact folded into a compression's output (lifecycle/compress.py), kept archived


class Category(str, Enum):
    """What a memory is about (preference, fact, experience, workflow, ...), plus core (promoted, never
    decays) and system (set by the operator)."""

    PREFERENCE = "preference"
    FACT = "fact"
    EXPERIENCE = "experience"
    WORKFLOW = "workflow"
    DECISION = "decision"
    SKILL_USAGE = "skill_usage"
    TODO = "todo"
    CORE = "core"
    SYSTEM = "system"


CATEGORY_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")  # a project's own category name (MemoryConfig.categories)


class CustomCategory(str):
    """A project's own category (MemoryConfig.categories, docs/categories.md): a name used where a
    Category is; `.value` is the name, as for a Category, so every face shows and filters it alike."""

    def __new__(cls, name: str) -> CustomCategory:
        if not CATEGORY_NAME.match(str(name)):
            raise ValueError(f"a category name is lower-case letters, digits and _ (at most 32), got {name!r}")
        return super().__new__(cls, str(name))

    @property
    def value(self) -> str:
        return str.__str__(self)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(cls, core_schema.str_schema(),
                                                            serialization=core_schema.to_string_ser_schema())


AnyCategory = Category | CustomCategory  # a built-in category first; any other valid name is a project's own


class DecayRule(BaseModel):
    """A row of the decay table (lifecycle/policy.py), declared beside CategorySpec, which validates a project's
    own: score = importance * factor ** (days past grace / period); `stepped` counts whole periods
    only ("x 0.85 per 5 days"); past `forget_after_days` without use the score is 0."""

    model_config = ConfigDict(frozen=True)

    grace_days: float = 0.0
    factor: float = Field(1.0, gt=0.0, le=1.0)
    period_days: float = Field(1.0, gt=0.0)
    stepped: bool = False
    forget_after_days: float | None = None


_DECAY_BORROW = (*(c.value for c in Category), "never")  # a custom category's decay: a built-in's row, or a rule


class CategorySpec(BaseModel):
    """A project's own category, declared in MemoryConfig.categories (docs/categories.md): name and description for the models, its decay row,
    keywords and examples that assign it offline, and whether the rules refuse what matches it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = Field("", max_length=500)
    decay: str | dict[str, Any] = "fact"
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    sensitive: bool = False
    never_store: bool = False

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        value = value.strip()
        if not CATEGORY_NAME.match(value):
            raise ValueError(f"category name {value!r}: lower-case letters, digits and _, at most 32, a letter first")
        if value in {c.value for c in Category}:
            raise ValueError(f"category {value!r} is built in; give a project's own category another name")
        return value

    @field_validator("keywords", "examples")
    @classmethod
    def _check_words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        words = tuple(" ".join(str(w).split()) for w in value)
        if any(not w or len(w) > 200 or not w.isprintable() for w in words) or len(words) > 200:
            raise ValueError("keywords and examples are at most 200 non-empty printable strings of at most 200 characters")
        return words

    @field_validator("decay")
    @classmethod
    def _check_decay(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(value, str):
            if value not in _DECAY_BORROW:
                raise ValueError(f"decay {value!r}: a built-in category ({', '.join(_DECAY_BORROW)}) or a rule's fields")
            return value
        return DecayRule.model_validate(value).model_dump()  # ValueError naming the bad field

    @property
    def refused(self) -> bool:
        """Whether the rules refuse a write that matches this category (sensitive or never_store)."""
        return self.sensitive or self.never_store


class State(str, Enum):
    ACTIVE = "active"
    ARCHIVED = "archived"  # decayed below the archive threshold, or an expired todo: not injected, still searchable
    FORGOTTEN = "forgotten"  # deleted by decay; its history event keeps the row, so `restore` brings it back


_CLOCK: list[Callable[[], float]] = [time.time]  # replaced only by `simulated_clock`


def now_ts() -> int:
    """The library's clock, epoch seconds (UTC): what writes stamp and what aging counts from."""
    return int(_CLOCK[-1]())


@contextmanager
def simulated_clock(clock: Callable[[], float]) -> Iterator[None]:
    """Run the library on another clock (simulations: scripts/simulate_lifecycle.py, tests of aging).
    Process-wide while the block runs: not for a service that serves real users at the same time."""
    _CLOCK.append(clock)
    try:
        yield
    finally:
        _CLOCK.remove(clock)


def ts_to_iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


LIFE_KEY = "life"  # where a memory's lifecycle fields live inside its metadata (validation.OWNED_KEYS)
DEFAULT_IMPORTANCE = 0.6  # the "medium" importance level


class Lifecycle(BaseModel):
    """How a memory ages (lifecycle/policy.py): `importance` is its score at `last_activated`, the
    score now is a pure function of both and the category. Explicit times, Graphiti's way:
    `valid_to` and `superseded_by` when a newer fact replaced it, `expires_at` for a dated todo.
    A memory written before lifecycle existed reads with these defaults (no migration writes)."""

    importance: float = Field(DEFAULT_IMPORTANCE, ge=0.0, le=1.0)
    category: AnyCategory = Field(Category.EXPERIENCE, union_mode="left_to_right")
    state: State = State.ACTIVE
    last_activated: int = 0
    activation_count: int = Field(0, ge=0)
    uses_day: int | None = None  # the UTC day (epoch days) of the counted uses in uses_today
    uses_today: int = Field(0, ge=0)
    valid_to: int | None = None
    superseded_by: int | None = None
    expires_at: int | None = None
    reviewed_at: int | None = None  # the MemoryReviewer's last look (asked again only after a later use)

    @classmethod
    def of(cls, metadata: dict[str, Any], memory_type: MemoryType, created_at: int | None = None) -> Lifecycle:
        """The stored fields, or, for a memory written before lifecycle existed (or a damaged entry),
        the defaults with the clock starting now: nothing ages until the decay step stamps it, so an
        upgrade never archives or forgets a row at once. (`created_at` is kept for callers; unused.)"""
        found = cls.stored_in(metadata)
        if found is not None:
            return found
        category = Category.FACT if memory_type is MemoryType.SEMANTIC else Category.EXPERIENCE
        return cls(category=category, last_activated=now_ts())

    @classmethod
    def stored_in(cls, metadata: dict[str, Any]) -> Lifecycle | None:
        """The valid lifecycle entry of this metadata, or None (missing or damaged)."""
        raw = metadata.get(LIFE_KEY)
        if isinstance(raw, dict) and "category" in raw and "last_activated" in raw:
            try:
                return cls.model_validate(raw)
            except ValueError:
                return None
        return None

    def stored(self) -> dict[str, Any]:
        """What goes into metadata[LIFE_KEY]: JSON, None fields left out."""
        return self.model_dump(mode="json", exclude_none=True)


_STAMP_MAX = 253_402_300_799  # validation.TS_MAX: the end of year 9999
_DAMAGED: dict[str, set[Any]] = {}  # user_id -> ids of rows read with a damaged stamp; at most 10,000 ids kept


def _damaged(row: dict[str, Any], key: str) -> None:
    """A row read without its damaged `key`: logged (the id, never the value) the first time it is met."""
    seen = _DAMAGED.setdefault(str(row.get("user_id", "")), set())
    if row.get("id") not in seen and sum(map(len, _DAMAGED.values())) < 10_000:
        seen.add(row.get("id"))
        logging.getLogger(__name__).warning("memory %s has a damaged %s; read without it", row.get("id"), key)


ROW_FIELDS: tuple[str, ...] = ("id", "user_id", "memory_type", "ts", "chat_id", "who", "text", "hit_count", "metadata")
STAMPS = ("created_at", "updated_at")  # a record's own fields, stored inside its metadata


def damaged_rows(user_id: str | None = None) -> int:
    """Rows (of `user_id`, or of every user) that reads met with a damaged stamp since the process started."""
    return len(_DAMAGED.get(user_id, ())) if user_id is not None else sum(map(len, _DAMAGED.values()))


class MemoryRecord(BaseModel):
    """One memory, episodic or semantic, as stored in the single collection.

    `ts` is when the remembered event happened (seconds since the epoch, UTC);
    `metadata.time` keeps it as ISO 8601 for prompts and people. `created_at` and
    `updated_at` are when this record was written and last changed.
    """

    model_config = ConfigDict(extra="allow")

    id: int
    user_id: str
    memory_type: MemoryType
    ts: int
    chat_id: str
    who: str
    text: str
    hit_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: int | None = None
    updated_at: int | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MemoryRecord:
        """Build from a Milvus row; vectors and search scores are dropped. A damaged stamp of the
        library's (a `created_at` that is not epoch seconds, metadata that is not an object: a row
        an older import let in) reads as missing, so no read of its user fails; the row's id is
        logged once and counted (`damaged_rows`)."""
        data = {k: v for k, v in row.items() if k not in ("vector", "sparse", "_distance")}
        meta = data.get("metadata") or {}
        if not isinstance(meta, dict):
            _damaged(data, "metadata")
            meta = {}
        data["metadata"] = dict(meta)
        for key in ("created_at", "updated_at"):
            stamp = data.get(key, meta.get(key))
            if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int) or not 0 <= stamp <= _STAMP_MAX):
                _damaged(data, key)
                stamp = None
            data[key] = stamp
        return cls.model_validate(data)

    def to_row(self, vector: Sequence[float] | None = None, *, with_id: bool = True) -> dict[str, Any]:
        """The one encoder of a record into a store row, used by every writer, so that a new field is
        written here and in store/schema.py, not in each writer: the columns of ROW_FIELDS, the stamps
        `created_at`/`updated_at` inside metadata (where from_row reads them; metadata's own stamp wins,
        as writers stamp metadata), the vector when given; without `with_id` for an insert (the store
        gives the id). Extra attributes a read carried are not columns and are not written."""
        meta = dict(self.metadata)
        for key in STAMPS:
            if getattr(self, key) is not None:
                meta.setdefault(key, getattr(self, key))
        row: dict[str, Any] = {"id": int(self.id), "user_id": self.user_id, "memory_type": self.memory_type.value,
                               "ts": int(self.ts), "chat_id": self.chat_id, "who": self.who, "text": self.text,
                               "hit_count": int(self.hit_count), "metadata": meta}
        if not with_id:
            del row["id"]
        if vector is not None:
            row["vector"] = list(vector)
        return row

    @property
    def time_iso(self) -> str:
        return str(self.metadata.get("time") or ts_to_iso(self.ts))

    @property
    def life(self) -> Lifecycle:
        """Importance, category, state and their times (defaults for a memory written before them)."""
        return Lifecycle.of(self.metadata, self.memory_type, self.created_at)


class SearchHit(BaseModel):
    """A recalled memory and why it ranked where it did."""

    memory: MemoryRecord
    score: float = Field(description="final ranking score (higher is better)")
    similarity: float | None = Field(default=None, description="cosine similarity to the query, if dense search ran")
    signals: dict[str, float] = Field(default_factory=dict, description="why it ranked here: the ranks in dense and BM25 "
                                      "search and each stage's part of the score (similarity, bm25_norm, chat, neighbour, recency, ...)")

    @property
    def id(self) -> int:
        return self.memory.id

    @property
    def text(self) -> str:
        return self.memory.text


class SearchResult(BaseModel):
    """Episodic, semantic and (when asked for) procedural hits, each list ranked best first."""

    episodic: list[SearchHit] = Field(default_factory=list)
    semantic: list[SearchHit] = Field(default_factory=list)
    procedural: list[SearchHit] = Field(default_factory=list)

    @property
    def all(self) -> list[SearchHit]:
        """Every list in one, each keeping its own order. Where they meet, the cosine (with the
        hubness stage's correction) decides: episodic scores carry context bonuses that other kinds
        cannot have, so scores are comparable only within a kind (by score where no cosine exists,
        as in BM25-only search)."""
        def key(h: SearchHit) -> float:
            return h.similarity + h.signals.get("hubness", 0.0) if h.similarity is not None else h.score

        lists = [self.episodic, self.semantic, self.procedural]
        heads = [0, 0, 0]
        out: list[SearchHit] = []
        while True:
            ready = [i for i in range(3) if heads[i] < len(lists[i])]
            if not ready:
                return out
            best = max(ready, key=lambda i: (key(lists[i][heads[i]]), -i))  # a tie goes to the earlier kind
            out.append(lists[best][heads[best]])
            heads[best] += 1

    def __len__(self) -> int:
        return len(self.episodic) + len(self.semantic) + len(self.procedural)


class HistoryEvent(BaseModel):
    """One change to one memory; kept after the memory itself is gone. `event_id` is the event's own
    id in the store (what `Memory.undo` takes); None on an event not yet stored."""

    event_id: int | None = None
    memory_id: int
    user_id: str
    action: HistoryAction
    old_text: str | None = None
    new_text: str | None = None
    actor: str = "api"
    at: int = Field(default_factory=now_ts)
    details: dict[str, Any] = Field(default_factory=dict)


class UndoResult(BaseModel):
    """What `Memory.undo` did: the memories that now hold the state from before the event (the same
    ids, or new ids where a deleted row came back) and those it removed (a merged record, a creation)."""

    event_id: int
    action: HistoryAction  # the action undone
    memory_ids: list[int] = Field(default_factory=list)
    removed_ids: list[int] = Field(default_factory=list)
    message: str = ""


class AddResult(BaseModel):
    """What `Memory.add` did with a turn."""

    ids: list[int] = Field(default_factory=list)
    stored: bool = False
    reason: str = ""
    pending_decision: bool = False
    refused: list[str] = Field(default_factory=list)  # what the project's instructions forbade storing, and why


class ObserveResult(BaseModel):
    """What `Memory.observe` (the KnowledgeMonitor) did after a turn: memory ids per action."""

    added: list[int] = Field(default_factory=list)
    updated: list[int] = Field(default_factory=list)
    boosted: list[int] = Field(default_factory=list)  # reinforced (within the cooldown and the daily cap)
    used: list[int] = Field(default_factory=list)  # the answer relied on them: hit_count + 1
    deleted: list[int] = Field(default_factory=list)  # soft: the row kept in a "forgotten" event (restore)
    refused: list[str] = Field(default_factory=list)  # what the model asked that was not done, and why
    llm_calls: int = 0
    pending_decision: bool = False  # the model failed: the turn was kept raw for a later decision
    reason: str = ""


class MemoryPage(BaseModel):
    """One page of a user's memories, oldest event first; `next_offset` is None on the last page."""

    items: list[MemoryRecord] = Field(default_factory=list)
    total: int = 0
    offset: int = 0
    next_offset: int | None = None


class ConsolidationStats(BaseModel):
    examined: int = 0
    merged: int = 0
    separated: int = 0  # memories a separation rewrote, each once per run (never more than the memories)
    separated_pairs: int = 0  # pairs told apart: one memory may be told apart from several neighbours
    semantic_created: int = 0
    pending_decided: int = 0
    llm_calls: int = 0
    similarity_lookups: int = 0
    errors: int = 0
    archived: int = 0  # by the decay step that ends a run (lifecycle/decay.py)
    forgotten: int = 0
    promoted: int = 0  # to core by the MemoryReviewer
    superseded: int = 0  # older facts a newer one made untrue (lifecycle/supersede.py)
    compressed: int = 0  # old facts archived into fewer facts or one pattern (lifecycle/compress.py)
    graph_read: int = 0  # memories read into the graph (graph: on; graph/build.py)
    seconds: float = 0.0
    _separated_ids: set[int] = PrivateAttr(default_factory=set)

    def count_separated(self, memory_ids: list[int]) -> None:
        """One more pair told apart, rewriting these memories: `separated` counts each memory once."""
        self.separated_pairs += 1
        self._separated_ids.update(memory_ids)
        self.separated = len(self._separated_ids)


class DecayStats(BaseModel):
    """What one decay pass did (lifecycle/decay.py)."""

    examined: int = 0
    stamped: int = 0  # memories written before lifecycle that got its fields (their clock starts at this pass)
    archived: int = 0
    expired: int = 0  # todos archived because their date passed (also counted in archived)
    forgotten: int = 0
    promoted: int = 0  # to core: the MemoryReviewer said so (rules: names, birthdays, standing preferences)
    reviewed: int = 0  # MemoryReviewer calls
    seconds: float = 0.0
