"""One typed request per verb: the parameters of `Memory.<verb>`, written once (docs/architecture.md, "Adding a
field").

A model here is the verb's parameters: each field's type, default and description (the parameter's doc). Every
face takes its parameters from it: Memory's method (generated into memory/requested.py by
`python scripts/verbs.py --write`), which builds the model once and hands the model object to the service;
REST's request body (the model itself); MCP's tool parameters (server/mcp_params.py); the Client (generated from
Memory's signature); the CLI's options (cli/fields.py gives every field a command does not spell by hand an
option). The first two fields are positional on Memory, the rest keyword-only.

Types are as loose as the verb accepts: the model refuses what is not even of the right shape (a number where a
text is meant, true or false where a time is meant); the service's checks (validation.py) decide the rest, with
the library's own messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SkipValidation,
    Strict,
    ValidationError,
    create_model,
)

from ..errors import InvalidInput
from ..models import Category, MemoryType
from .defaults import INJECT_MAX_ITEMS, INJECT_MIN_SCORE

Message = dict[str, str]
MAX_TURNS = 1000  # the turns one add may hold (issue 42): past it a clear InvalidInput (422) before any work
MAX_IDS = 1000  # ids one request may name (issue 42); the batch verbs take 1,000 items (memory/batch.py)


def not_a_flag(value: Any) -> Any:
    """Refuse true/false where a time is meant. Why: pydantic's lax mode reads `true` as the number 1, so
    `"ts": true` was stored as 1970-01-01 (issue 57); the library refuses a bool, and so does the wire."""
    if isinstance(value, bool):
        raise ValueError("a time is epoch seconds or ISO 8601, not true or false")
    return value


NotAFlag = BeforeValidator(not_a_flag)
Timestamp = Annotated[int | float | Annotated[datetime, Strict(False)] | None, NotAFlag]  # ISO 8601 text read as a datetime
Expiry = Annotated[int | float | str | datetime | None, NotAFlag]  # also words naming a day ("until Monday")
Turns = Annotated[list[Message], Field(max_length=MAX_TURNS)]
# A JSON object the service checks itself (validation.check_caller_metadata, check_metadata: keys, depth, size,
# the library's own keys), with the messages that name the limit: not judged twice.
Metadata = Annotated[dict[str, Any] | None, SkipValidation]
Flag = Annotated[bool, Strict()]  # true or false only: not 1, not "yes"
Shown = Annotated[Sequence[Any], Field(max_length=MAX_IDS)]  # memory ids, or the search hits that carry them
Kinds = Annotated[list[MemoryType | str], Field(max_length=8), Strict(False)]  # several kinds of memory at once


class Request(BaseModel):
    """A verb's parameters. Unknown fields are refused (a misspelt option is an error, not a silent default), and
    values are taken as they are (strict: bytes are not text, "5" and true are not numbers), except where a type
    says `Strict(False)` (a time, which may come as ISO 8601 text; a tuple of kinds)."""

    model_config = ConfigDict(extra="forbid", strict=True)


R = TypeVar("R", bound=Request)


def build(model: type[R], **fields: Any) -> R:
    """The verb's request from its arguments, checked once: a value of the wrong shape is InvalidInput naming
    the field (as every bad argument is), never pydantic's ValidationError."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else model.__name__  # not the union member pydantic tried
        message = first["msg"].removeprefix("Value error, ")
        if sum(1 for e in exc.errors() if e["loc"][:1] == first["loc"][:1]) > 1:  # no member of a union took it
            message = f"a {type(first['input']).__name__} is none of the kinds of value it takes"
        raise InvalidInput(f"{field}: {message}") from None


def fields_of(request: BaseModel) -> dict[str, Any]:
    """The request's fields as given (values as validated, not serialised: a datetime stays a datetime)."""
    return {name: getattr(request, name) for name in type(request).model_fields}


class AddRequest(Request):
    """Remember a turn: `messages` is a string, one {"role", "content"} dict (as mem0 takes it) or a list of
    them. With `infer=False` the text is stored as-is as one memory; with `infer=True` the rules gate or the
    WriteDecider (one LLM call) decides whether and what to store; a deferred decision or a failed LLM keeps the
    turn raw, marked `pending_decision` (see decide_pending). A memory past its `expires_at` leaves search, list
    and the prompt block; decay archives it (docs/filters.md).

    Raises InvalidInput before anything is written for a bad argument, or for metadata that sets a key the
    library owns (`created_at`, `updated_at`, `pending_decision`, ...: see validation.OWNED_KEYS);
    EmbeddingError / StoreError when embedding or writing fails. An LLM failure is not raised: the turn is kept
    raw."""

    messages: str | Message | Turns = Field(description="the turn: a string, one {role, content} dict or a list of "
                                                        "them (at most 1,000)")
    user_id: str = Field(description="whose memory it is")
    chat_id: str = Field(default="default", description="the conversation it was said in")
    who: str | None = Field(default=None, description="who said or did it (default: the user)")
    metadata: Metadata = Field(default=None, description="the caller's own keys, kept with the memory "
                                                                      "(not a key the library owns)")
    infer: bool = Field(default=False, description="let the write decider (an LLM or the offline rules) decide "
                                                   "what to keep")
    ts: Timestamp = Field(default=None, description="when it happened: epoch seconds, a datetime or ISO 8601 "
                                                    "(default: now)")
    memory_type: MemoryType | str = Field(default=MemoryType.EPISODIC, description="episodic (a turn), semantic (a "
                                          "stable fact) or procedural (a tool-call sequence that worked)")
    expires_at: Expiry = Field(default=None, description="when it expires: epoch seconds, a datetime, ISO 8601, or "
                               "words naming a day (\"until Monday\", \"到下周一\"), resolved once from when it was "
                               "said: the end of that day in the user's zone; docs/filters.md")
    agent_id: str | None = Field(default=None, description="the agent the memory belongs to within the user (none: "
                                                           "the user's shared memory); docs/agents.md")
    run_id: str | None = Field(default=None, description="the run it was said in, recorded and filterable; "
                                                         "docs/agents.md")


class SearchRequest(Request):
    """Up to k_episodic episodic and k_semantic semantic memories, each list best first; procedural memories
    (k_procedural) only when `memory_type` or `memory_types` names them. Without a working embedder BM25 serves
    alone. A question about the past ("where did I live before?", "我以前住在哪") also gets the superseded
    memories, each just before the one that replaced it (docs/slots.md).

    Raises InvalidInput for a bad argument (empty query, unknown memory_type or mode, both memory_type and
    memory_types, limit outside 0..1000, a filter that is not a JSON object, names an unknown field or operator,
    has a wrong value type or is nested too deep, an as_of that names no time); StoreError on failure. An embedder
    failure is not raised: BM25 answers instead."""

    query: str = Field(description="what to recall")
    user_id: str = Field(description="whose memories")
    limit: int | None = Field(default=None, description="caps every list at once (0..1000; default: k_episodic, "
                                                        "k_semantic, k_procedural)")
    memory_type: MemoryType | str | None = Field(default=None, description="one kind: episodic, semantic or procedural")
    filters: Metadata = Field(default=None, description="chat_id, who, memory_type, category, state, ts or "
                                           "metadata.<key> (a bare key some memory of the user has also works): a value, "
                                           "or mem0's operators (eq, ne, gt, gte, lt, lte, in, nin, contains, icontains, "
                                           "exists) with AND / OR / NOT, e.g. {\"priority\": {\"gte\": 3}}; docs/filters.md")
    mode: str | None = Field(default=None, description="hybrid, dense or bm25 for this call (default: config.search_mode)")
    include_superseded: bool = Field(default=False, description="also facts that a newer one superseded")
    memory_types: Kinds | None = Field(default=None, description="several kinds, e.g. [\"episodic\", \"procedural\"]")
    graph: Flag | None = Field(default=None, description="the graph stage (memories linked through the user's entities "
                                                         "and triples) on or off for this search (default: config `graph`)")
    include_expired: Flag = Field(default=False, description="also memories past their expires_at")
    agent_id: str | None = Field(default=None, description="the agent reading, with agent_scope; docs/agents.md")
    agent_scope: str = Field(default="both", description="own (the agent's memories), shared (the user's without an "
                                                         "agent) or both")
    run_id: str | None = Field(default=None, description="only memories of this run")
    as_of: datetime | int | float | str | None = Field(default=None, description="answer as the memories stood then "
                                                       "(said by then, not superseded or expired by then): a datetime, "
                                                       "epoch seconds or ISO 8601 (a date alone is its end); docs/slots.md")



class ObserveRequest(Request):
    """The chat hook's after-turn call in one LLM call (the KnowledgeMonitor), in place of add(infer=True),
    mark_used and reconsolidation: given the turn (with the answer) and the memories `shown` for it (best first; at
    most 50 reach the model), the model adds what is new, and per shown memory updates (the old text to history),
    boosts, deletes (soft: restorable) or skips it, and says which the answer used (hit + reinforcement). Ids
    outside the shown set, and updates or deletes of core memories, are refused and listed. With nothing shown, a
    turn the rules gate is certain of costs no call. A model failure keeps the turn raw, pending, as
    add(infer=True) does; nothing else changes.

    Raises InvalidInput for a bad argument, as `add`; EmbeddingError / StoreError on failure. A shown id that is
    missing or another user's is not shown to the model (listed in `refused`)."""

    messages: str | Message | Turns = Field(description="the turn with the answer: a string or [{role, content}, ...]")
    user_id: str = Field(description="whose memories")
    shown: Shown = Field(default=(), description="the memories retrieved for this turn, best first: ids or search hits")
    chat_id: str = Field(default="default", description="the conversation it was said in")
    who: str | None = Field(default=None, description="who said it (default: the user)")
    metadata: Metadata = Field(default=None, description="the caller's own keys, kept on what it adds")
    ts: Timestamp = Field(default=None, description="when it happened: epoch seconds, a datetime or ISO 8601 "
                                                    "(default: now)")
    agent_id: str | None = Field(default=None, description="the agent observing: what it adds is its own, and only its "
                                                           "own and shared memories are shown or forgotten; docs/agents.md")
    run_id: str | None = Field(default=None, description="the run, recorded on what it adds")



def a_number(value: Any) -> Any:
    """Refuse true/false where a number is meant (pydantic's lax mode would read `true` as 1)."""
    if isinstance(value, bool):
        raise ValueError("a number, not true or false")
    return value


Count = Annotated[int, BeforeValidator(a_number)]
Score = Annotated[float, BeforeValidator(a_number)]
Clock = Annotated[int | None, NotAFlag]  # epoch seconds standing in for the clock (simulations)


class ContextRequest(Request):
    """The block an agent puts in its system prompt: active memories scoring at least `min_score`, at most
    `max_items`, core first, then (with `query`) what the search finds, then the rest by score, grouped by
    category; each line dated with `dates`. The texts sit inside <data> delimiters that no stored text can close.
    "" when nothing qualifies.

    Raises InvalidInput for a bad user_id, query, max_items (0..1000), min_score (0..1) or now; StoreError on
    failure."""

    user_id: str = Field(description="whose memories")
    query: str | None = Field(default=None, description="also the memories most related to this")
    max_items: Count = Field(default=INJECT_MAX_ITEMS, description="at most this many memories (0..1000)")
    min_score: Score = Field(default=INJECT_MIN_SCORE, description="only memories scoring at least this, 0..1 (core: "
                                                                   "any score)")
    dates: bool = Field(default=False, description="start each line with the memory's date")
    now: Clock = Field(default=None, description="the clock, epoch seconds (simulations; "
                                                                            "default: now)")
    agent_id: str | None = Field(default=None, description="the agent reading, with agent_scope; docs/agents.md")
    agent_scope: str = Field(default="both", description="own (the agent's memories), shared (the user's without an "
                                                         "agent) or both")
    run_id: str | None = Field(default=None, description="only memories of this run")


class ListRequest(Request):
    """Every memory of this user matching `filters` (search's syntax, docs/filters.md), oldest event first; paged
    internally, never capped. A memory past its `expires_at` is left out unless `include_expired`.

    Raises InvalidInput for a bad user_id, memory_type or filter; StoreError on failure."""

    user_id: str = Field(description="whose memories")
    memory_type: MemoryType | str | None = Field(default=None, description="one kind: episodic, semantic or "
                                                                           "procedural (default: all three)")
    filters: Metadata = Field(default=None, description="search's filters (docs/filters.md), e.g. "
                                                        "{\"priority\": {\"gte\": 3}}")
    include_expired: bool = Field(default=False, description="also memories past their expires_at")
    agent_id: str | None = Field(default=None, description="the agent reading, with agent_scope; docs/agents.md")
    agent_scope: str = Field(default="both", description="own (the agent's memories), shared (the user's without an "
                                                         "agent) or both")
    run_id: str | None = Field(default=None, description="only memories of this run")


class IterRequest(ListRequest):
    """Every memory of this user matching `filters` (as `get_all`), a page at a time from the store, in no
    particular order (`get_all` sorts them); for exports too large to hold at once.

    Raises InvalidInput for a bad user_id, memory_type or filter (a value of the wrong kind when called, the
    rest on the first `next`, as a generator does); StoreError on failure."""


class PageRequest(ListRequest):
    """A page of `get_all` (the same filters, expiry and agent scope): what a service or a UI lists without
    sending every memory at once.

    Raises InvalidInput for a bad user_id, memory_type, filter, offset (< 0) or limit (outside 0..1000);
    StoreError on failure."""

    offset: Count = Field(default=0, description="how many memories to skip (0 or more)")
    limit: Count = Field(default=100, description="at most this many memories (0..1000)")


class UpdateRequest(Request):
    """Replace a memory's text (re-embedded) and merge `metadata` into it; the id stays and the old text goes to
    history. `expires_at` sets when it expires, as `add`'s (relative words count from now).

    Raises InvalidInput for a bad argument or a library-owned metadata key (as `add`); NotFound when the memory is
    missing or another user's; EmbeddingError / StoreError on failure."""

    memory_id: int = Field(description="the memory to change")
    text: str = Field(description="its new text")
    user_id: str = Field(description="whose memory it is")
    metadata: Metadata = Field(default=None, description="the caller's keys to set in its metadata (not a key the "
                                                         "library owns)")
    expires_at: Expiry = Field(default=None, description="when it expires, as add's (words count from now)")


class CurateRequest(Request):
    """A person's (or the agent's) explicit judgement: set a memory's category (`core` promotes it: never decays,
    never removed by a job) and/or its importance in [0, 1], which counts from now. The text and id stay; history
    records the change ("updated", details old and new).

    Raises InvalidInput for a bad id, user_id, category or importance, or when neither is given; NotFound when the
    memory is missing or another user's; StoreError on failure."""

    memory_id: int = Field(description="the memory to judge")
    user_id: str = Field(description="whose memory it is")
    category: Category | str | None = Field(default=None, description="preference, fact, experience, workflow, "
                                            "decision, skill_usage, todo, core (never decays), system or one of the "
                                            "project's own (MemoryConfig.categories)")
    importance: Score | None = Field(default=None, description="the score in [0, 1], counted from now")


# The orders `browse` sorts by; checked by the browse service with its own message, so not judged here.
SortKey = Annotated[Literal["time", "score", "hits", "id", "category"], SkipValidation]


class BrowseRequest(Request):
    """A page of one user's memories matching every filter given, sorted by time, score (now), hits, id or
    category: the Web UI's view.

    Raises InvalidInput for a bad argument; StoreError on failure."""

    user_id: str = Field(description="whose memories")
    memory_type: MemoryType | str | None = Field(default=None, description="one kind: episodic, semantic or procedural")
    category: str | None = Field(default=None, description="one category, built in or the project's own")
    state: str | None = Field(default=None, description="active, archived or superseded")
    chat_id: str | None = Field(default=None, description="one conversation")
    text: str | None = Field(default=None, description="a case-insensitive substring of the text")
    sort: SortKey = Field(default="time", description="time, score (now), hits, id or category")
    descending: bool = Field(default=True, description="highest (newest) first")
    offset: Count = Field(default=0, description="how many memories to skip (0 or more)")
    limit: Count = Field(default=50, description="at most this many memories (0..1000)")
    filters: Metadata = Field(default=None, description="search's filters, the same fields and rule (store/filters.py)")


class DecidePendingRequest(Request):
    """Decide now the turns kept raw with `pending_decision` (write_decision: deferred, or a failed model), at
    most `limit` of them: consolidation's pending phase alone, for a background worker. Returns how many were
    decided (kept, rewritten or removed); a failure leaves a turn pending.

    Raises InvalidInput for a bad user_id or limit; StoreError on failure. An LLM failure is not raised: the turn
    stays pending."""

    user_id: str | None = Field(default=None, description="whose turns (default: every user's)")
    limit: Count | None = Field(default=None, description="at most this many turns (0..1000; default: all)")


def without(model: type[Request], *names: str) -> type[Request]:
    """The model less some fields: a REST body whose other fields travel in the path (PATCH's memory_id)."""
    kept = {name: (field.annotation, field) for name, field in model.model_fields.items() if name not in names}
    return create_model(model.__name__, __base__=Request, __doc__=model.__doc__, **kept)  # type: ignore[call-overload,no-any-return]


# The verbs whose parameters are one model here: verb -> (model, the facade's service attribute that takes it,
# the result Memory returns). contract/faces.py generates Memory's methods for them (memory/requested.py).
REQUESTS: dict[str, tuple[type[Request], str, str]] = {
    "add": (AddRequest, "_records", "AddResult"),
    "search": (SearchRequest, "_records", "SearchResult"),
    "observe": (ObserveRequest, "_hook", "ObserveResult"),
    "context": (ContextRequest, "_lifecycle", "str"),
    "get_all": (ListRequest, "_records", "list[MemoryRecord]"),
    "page": (PageRequest, "_records", "MemoryPage"),
    "iter_all": (IterRequest, "_records", "Iterator[MemoryRecord]"),
    "update": (UpdateRequest, "_records", "MemoryRecord"),
    "curate": (CurateRequest, "_lifecycle", "MemoryRecord"),
    "browse": (BrowseRequest, "_browse", "MemoryPage"),
    "decide_pending": (DecidePendingRequest, "_consolidation", "int"),
}
