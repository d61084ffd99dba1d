"""OpenTelemetry spans (docs/tracing.md), behind the `[otel]` extra and the `tracing` setting.

One span per public verb ("hippocampus.<verb>": Memory's methods wrapped once at import from the one
list of verbs in verbs.py, so AsyncMemory and every face get them), and inside it one child span per
embedder call, store call and LLM call. Attribute names follow the OpenTelemetry semantic conventions
where they exist (gen_ai.* for the models, db.* for Milvus, user.hash / user.id, error.type). User, agent, run, chat and memory ids are hashed (salted
sha256, truncated) unless `trace_ids: plain`; texts are never recorded unless `trace_content: true`;
an error records its type, never its message (which may quote user text).

Off costs next to nothing: without opentelemetry installed no verb is wrapped; with `tracing: false`
(the default) a verb reads one setting and runs, no proxy is made, and the hooks in the store and the
LLM client read one context variable and return. Child spans are made only inside a verb span of a
Memory whose tracing is on."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._version import __version__

try:  # the [otel] extra; opentelemetry-api alone is enough to make spans (an SDK exports them)
    from opentelemetry import trace as _otel
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # pragma: no cover - exercised in a subprocess by tests/observability
    _otel = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from ..config import MemoryConfig

log = logging.getLogger(__name__)

AVAILABLE = _otel is not None
CONTENT_CHARS = 4096  # a recorded text (trace_content) is cut here
_HASH_CHARS = 16  # hex digits of sha256 kept: 64 bits, enough to tell a deployment's ids apart
# verb argument -> (attribute when hashed, attribute when plain)
ID_ATTRIBUTES = {
    "user_id": ("user.hash", "user.id"),
    "agent_id": ("hippocampus.agent.hash", "gen_ai.agent.id"),
    "run_id": ("hippocampus.run.hash", "hippocampus.run.id"),
    "chat_id": ("hippocampus.chat.hash", "gen_ai.conversation.id"),
    "memory_id": ("hippocampus.memory.hash", "hippocampus.memory.id"),
    "memory_ids": ("hippocampus.memory.hash", "hippocampus.memory.id"),
    "ids": ("hippocampus.memory.hash", "hippocampus.memory.id"),
}
CONTENT_ARGS = ("query", "messages", "text", "exchange")  # recorded only with trace_content
PLAIN_ARGS = ("memory_type", "infer", "mode", "limit", "offset", "k")  # settings, never user text


@dataclass(frozen=True)
class TraceSettings:
    """What the spans of one Memory may record: texts (`content`), ids in clear (`plain_ids`), the salt."""

    content: bool = False
    plain_ids: bool = False
    salt: bytes = b""

    @classmethod
    def of(cls, config: MemoryConfig) -> TraceSettings:
        salt = config.trace_salt.get_secret_value() if config.trace_salt else config.collection_name
        return cls(content=config.trace_content, plain_ids=config.trace_ids == "plain", salt=salt.encode("utf-8"))

    def ident(self, value: Any) -> str:
        """`value` as a span may carry it: the id itself with plain ids, else its salted hash."""
        text = str(value)
        if self.plain_ids:
            return text
        return hashlib.sha256(self.salt + b"\x00" + text.encode("utf-8")).hexdigest()[:_HASH_CHARS]

    def id_attribute(self, arg: str) -> str:
        return ID_ATTRIBUTES[arg][1 if self.plain_ids else 0]


@dataclass
class _LLMNote:
    """Filled by the LLM client while its call's span is open (llm_attempt, llm_usage)."""

    attempts: int = 0
    response_format: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: list[str] = field(default_factory=list)


_active: ContextVar[TraceSettings | None] = ContextVar("hippocampus_tracing", default=None)
_llm_note: ContextVar[_LLMNote | None] = ContextVar("hippocampus_llm_note", default=None)
_warned = [False]


def enabled(config: MemoryConfig) -> bool:
    """Whether `config` asks for spans and opentelemetry can make them (a warning, once, when it cannot)."""
    if not getattr(config, "tracing", False):
        return False
    if not AVAILABLE and not _warned[0]:
        _warned[0] = True
        log.warning("tracing: true, but opentelemetry is not installed: pip install 'hippocampus[otel]'")
    return AVAILABLE


@functools.lru_cache(maxsize=1)
def tracer() -> Any:
    """Hippocampus's tracer from the global provider (a proxy that follows a provider set later)."""
    return _otel.get_tracer("hippocampus", __version__)


def fail(span: Any, exc: BaseException) -> None:
    """Mark `span` failed with the exception's type only: its message may quote user text."""
    kind = type(exc).__qualname__
    qualified = f"{type(exc).__module__}.{kind}" if type(exc).__module__ != "builtins" else kind
    span.set_attribute("error.type", qualified)
    span.add_event("exception", {"exception.type": qualified})
    span.set_status(Status(StatusCode.ERROR, kind))


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:CONTENT_CHARS]


# ---------------------------------------------------------------------- the verb spans
def instrument(cls: type, verbs: Mapping[str, bool]) -> type:
    """Wrap each public verb of `cls` in its span, once, at import: `verbs` maps a verb's name to whether it
    writes (Memory passes contract/verbs.py's list). Without opentelemetry nothing is wrapped; with it, a
    Memory whose `tracing` is off pays one attribute read per verb."""
    if not AVAILABLE:
        return cls
    for name, writes in verbs.items():
        method = getattr(cls, name, None)  # its own or a base's (memory/requested.py, generated)
        if callable(method) and not getattr(method, "_hippocampus_traced", False):
            setattr(cls, name, _traced_verb(name, writes, method))
    return cls


def _traced_verb(name: str, writes: bool, method: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(method)

    @functools.wraps(method)  # name, docstring and (through __wrapped__) the signature verbs.py reads
    def verb(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = self.ctx.config
        if not config.tracing:
            return method(self, *args, **kwargs)
        settings = TraceSettings.of(config)
        attributes = {"hippocampus.verb": name, "hippocampus.verb.writes": writes,
                      **verb_attributes(signature, (self, *args), kwargs, settings)}
        with tracer().start_as_current_span(f"hippocampus.{name}", attributes=attributes, record_exception=False,
                                            set_status_on_exception=False) as span:
            token = _active.set(settings)
            try:
                result = method(self, *args, **kwargs)
            except BaseException as exc:
                fail(span, exc)
                raise
            finally:
                _active.reset(token)
            count = result_count(result)
            if count is not None:
                span.set_attribute("hippocampus.result.count", count)
            return result

    verb._hippocampus_traced = True  # type: ignore[attr-defined]
    return verb


def verb_attributes(signature: inspect.Signature, args: Sequence[Any], kwargs: dict[str, Any],
                    settings: TraceSettings) -> dict[str, Any]:
    """The span's attributes from a verb's arguments: ids hashed, settings as they are, texts only with content."""
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return {}  # the call itself will raise
    out: dict[str, Any] = {}
    for arg, value in bound.items():
        if value is None:
            continue
        if arg in ID_ATTRIBUTES:
            values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
            idents = [settings.ident(v) for v in values][:100]
            out[settings.id_attribute(arg)] = idents if arg in ("memory_ids", "ids") else idents[0]
        elif arg in PLAIN_ARGS and isinstance(value, (bool, int, float, str)):
            out[f"hippocampus.{arg}"] = value
        elif arg in CONTENT_ARGS and settings.content:
            out[f"hippocampus.{arg}"] = _clip(value)
    return out


def result_count(result: Any) -> int | None:
    """How many things a verb returned (hits, records, ids), when it says."""
    if isinstance(result, (list, tuple)):
        return len(result)
    for name in ("all", "items", "ids", "results"):
        value = getattr(result, name, None)
        if isinstance(value, list):
            return len(value)
    return None


# ---------------------------------------------------------------------- the embedder
def traced_embedder(embedder: Any, config: MemoryConfig) -> Any:
    """`embedder` itself when tracing is off, else a proxy whose `encode` is a child span."""
    return TracedEmbedder(embedder) if enabled(config) and not isinstance(embedder, TracedEmbedder) else embedder


class TracedEmbedder:
    """An Embedder whose encode calls are spans (texts, dimensions, model); anything else is the inner one's."""

    def __init__(self, inner: Any):
        self.inner = inner

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str], role: str = "passage") -> Any:
        if _active.get() is None:
            return self.inner.encode(texts, role=role)
        return _embedding_span(self.inner.model_name, self.inner.dim, texts, role, lambda: self.inner.encode(texts, role=role))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _embedding_span(model: str, dim: int, texts: Sequence[str], role: str, call: Callable[[], Any]) -> Any:
    """`call()`, one encode, in a child span: the model, the dimension, how many texts (never the texts)."""
    attributes = {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": model,
                  "gen_ai.embeddings.dimension.count": dim, "hippocampus.embedding.texts": len(texts),
                  "hippocampus.embedding.role": role}
    with tracer().start_as_current_span(f"embeddings {model}", kind=SpanKind.CLIENT, attributes=attributes,
                                        record_exception=False, set_status_on_exception=False) as span:
        try:
            return call()
        except BaseException as exc:
            fail(span, exc)
            raise


def traced_encode(encode: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate an embedder's own `encode(self, texts, role)` with the embedder span, for an embedder no Memory
    wraps in TracedEmbedder: the cross-language one (embeddings/crosslang.py), which the store makes and shares.
    Outside a traced verb (or without opentelemetry) it is the plain call."""
    @functools.wraps(encode)
    def wrapper(self: Any, texts: Sequence[str], role: str = "passage") -> Any:
        if _active.get() is None:
            return encode(self, texts, role)
        return _embedding_span(self.model_name, self.dim, texts, role, lambda: encode(self, texts, role))
    return wrapper


# ---------------------------------------------------------------------- the store
def store_call(fn: Callable[..., Any], method: str, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, a Milvus client call, in a child span (operation, collection, rows)."""
    if _active.get() is None:
        return fn(*args, **kwargs)
    collection = args[0] if args and isinstance(args[0], str) else kwargs.get("collection_name")
    attributes = {"db.system": "milvus", "db.system.name": "milvus", "db.operation.name": method}
    if collection:
        attributes["db.collection.name"] = collection
    partitions = kwargs.get("partition_names")
    if partitions:  # the buckets read or written (a tenant's bucket, never a user id)
        attributes["hippocampus.store.partitions"] = [str(p) for p in partitions]
    data = kwargs.get("data")
    if method in ("insert", "upsert") and isinstance(data, list):
        attributes["hippocampus.store.rows"] = len(data)
    with tracer().start_as_current_span(f"{method} {collection}" if collection else method, kind=SpanKind.CLIENT,
                                        attributes=attributes, record_exception=False,
                                        set_status_on_exception=False) as span:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            fail(span, exc)
            raise
        rows = _rows(method, result)
        if rows is not None:
            span.set_attribute("db.response.returned_rows" if method in ("query", "search", "hybrid_search")
                               else "hippocampus.store.rows", rows)
        return result


def _rows(method: str, result: Any) -> int | None:
    if method == "delete":
        return int(result.get("delete_count", 0)) if isinstance(result, dict) else len(result)
    if method in ("search", "hybrid_search"):
        return sum(len(hits) for hits in result)
    if method == "query" and isinstance(result, list):
        return len(result)
    return None


# ---------------------------------------------------------------------- the LLM
def chat_json(model: Any, prompt: Any, schema: type) -> Any:
    """`model.chat_json(prompt, schema)` in a child span: the model, the prompt, the format negotiated,
    tokens and attempts as the client reports them (llm_attempt, llm_usage); texts only with content."""
    settings = _active.get()
    if settings is None or _llm_note.get() is not None:  # off, or a wrapper around a traced call
        return model.chat_json(prompt, schema)
    name = str(getattr(model, "model", "unknown"))
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": _provider(model),
                  "gen_ai.request.model": name, "gen_ai.output.type": "json",
                  "hippocampus.prompt": prompt.name, "hippocampus.llm.schema": schema.__name__}
    if settings.content:
        attributes["gen_ai.input.messages"] = _clip([{"role": "system", "content": prompt.system},
                                                     {"role": "user", "content": prompt.user}])
    note = _LLMNote()
    with tracer().start_as_current_span(f"chat {name}", kind=SpanKind.CLIENT, attributes=attributes,
                                        record_exception=False, set_status_on_exception=False) as span:
        token = _llm_note.set(note)
        try:
            result = model.chat_json(prompt, schema)
        except BaseException as exc:
            fail(span, exc)
            raise
        finally:
            _llm_note.reset(token)
            _note_attributes(span, note)
        if settings.content:
            span.set_attribute("gen_ai.output.messages", _clip(result.model_dump(mode="json")))
        return result


def _provider(model: Any) -> str:
    """"openai" for the OpenAI-compatible client (under any wrapper), else "_OTHER" (the rules, a script)."""
    seen = 0
    while model is not None and seen < 5:
        if type(model).__name__ == "LLMClient":
            return "openai"
        model, seen = getattr(model, "inner", None), seen + 1
    return "_OTHER"


def _note_attributes(span: Any, note: _LLMNote) -> None:
    if note.attempts:
        span.set_attribute("hippocampus.llm.attempts", note.attempts)
        span.set_attribute("hippocampus.llm.retries", note.attempts - 1)
    if note.response_format:
        span.set_attribute("hippocampus.llm.response_format", note.response_format)
    if note.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", note.input_tokens)
    if note.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", note.output_tokens)
    if note.finish_reasons:
        span.set_attribute("gen_ai.response.finish_reasons", note.finish_reasons)


def llm_attempt(response_format: str) -> None:
    """The LLM client asks once more, with `response_format` (the mode negotiated so far)."""
    note = _llm_note.get()
    if note is not None:
        note.attempts += 1
        note.response_format = response_format


def llm_usage(response: Any) -> None:
    """The LLM client got `response` (an openai ChatCompletion): its token counts and finish reason add up."""
    note = _llm_note.get()
    if note is None:
        return
    usage = getattr(response, "usage", None)
    if usage is not None:
        if getattr(usage, "prompt_tokens", None) is not None:
            note.input_tokens = (note.input_tokens or 0) + int(usage.prompt_tokens)
        if getattr(usage, "completion_tokens", None) is not None:
            note.output_tokens = (note.output_tokens or 0) + int(usage.completion_tokens)
    for choice in getattr(response, "choices", None) or ():
        if getattr(choice, "finish_reason", None):
            note.finish_reasons.append(str(choice.finish_reason))


def spans_active() -> bool:
    """Whether a traced verb is running in this context (child spans are being made)."""
    return _active.get() is not None

