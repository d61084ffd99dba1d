"""OpenTelemetry spans (hippocampus/observability/tracing.py, server/trace_requests.py), read back with the SDK's
InMemorySpanExporter: a real Memory on milvus-lite, a real uvicorn for the service, a real OpenAI-compatible
HTTP stub for the LLM client; only the model's answers are scripted."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from hippocampus import Memory  # noqa: E402
from hippocampus.errors import NotFound  # noqa: E402
from hippocampus.llm import LLMClient  # noqa: E402
from hippocampus.observability.tracing import TracedEmbedder  # noqa: E402
from hippocampus.server.app import create_app  # noqa: E402
from hippocampus.testing import DeterministicEmbedder, ScriptedChatModel  # noqa: E402
from tests.openai_stub import Fault, OpenAIStub  # noqa: E402
from tests.service_support import served  # noqa: E402

TURN = "I like green tea with jasmine"
USER = "alice-7f3"
AGENT = "planner-9c1"
COLLECTION = "traced"
DECISION = {"write_episodic": True, "thing": "likes green tea with jasmine"}


def _exporter() -> InMemorySpanExporter:
    """The SDK's in-memory exporter on the global provider (set once per process; another test may have set one)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[attr-defined]
    return exporter


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = _exporter()
    yield exporter
    exporter.shutdown()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("otel") / "m.db"


@pytest.fixture(scope="module")
def memory(db: Path, spans: InMemorySpanExporter) -> Iterator[Memory]:
    llm = ScriptedChatModel(replies={"WriteDecision": DECISION})
    with Memory(milvus_uri=str(db), collection_name=COLLECTION, embedder=DeterministicEmbedder(), llm=llm,
                tracing=True, llm_gate="off") as m:
        yield m


def _hash(value: str) -> str:
    """The salted hash, computed here rather than by tracing.py: the default salt is the collection name."""
    return hashlib.sha256(f"{COLLECTION}\x00{value}".encode()).hexdigest()[:16]


def _fresh(spans: InMemorySpanExporter) -> None:
    spans.clear()


def _named(found: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in found if s.name.startswith(prefix)]


def _values(found: list[ReadableSpan]) -> str:
    """Every attribute and event value of `found`, as one text to search for what must not be there."""
    parts: list[Any] = []
    for s in found:
        parts += list((s.attributes or {}).values())
        parts += [v for e in s.events for v in (e.attributes or {}).values()]
        parts.append(s.status.description or "")
    return json.dumps(parts, default=str)


def test_a_verb_is_one_span_with_the_embedder_the_store_and_the_model_inside(memory: Memory, spans) -> None:
    _fresh(spans)
    result = memory.add(TURN, user_id=USER, agent_id=AGENT, infer=True)
    assert result.stored
    found = list(spans.get_finished_spans())
    (verb,) = _named(found, "hippocampus.")
    assert verb.name == "hippocampus.add" and verb.parent is None
    assert verb.attributes["hippocampus.verb.writes"] is True and verb.attributes["hippocampus.result.count"] == 1
    children = [s for s in found if s is not verb]
    assert children and all(s.parent is not None and s.parent.span_id == verb.context.span_id for s in children)
    assert {s.context.trace_id for s in found} == {verb.context.trace_id}
    (llm,) = _named(children, "chat ")
    assert llm.attributes["gen_ai.operation.name"] == "chat" and llm.attributes["gen_ai.request.model"] == "scripted"
    assert llm.attributes["hippocampus.prompt"] == "write_decider" and llm.attributes["gen_ai.output.type"] == "json"
    embed = _named(children, "embeddings ")
    assert embed and embed[0].attributes["gen_ai.request.model"] == memory.embedder.model_name
    assert embed[0].attributes["gen_ai.embeddings.dimension.count"] == 384
    assert embed[0].attributes["hippocampus.embedding.texts"] == 1
    (insert,) = [s for s in children if s.name == f"insert {COLLECTION}"]
    assert insert.attributes["db.system"] == "milvus" and insert.attributes["db.operation.name"] == "insert"
    assert insert.attributes["db.collection.name"] == COLLECTION and insert.attributes["hippocampus.store.rows"] == 1
    # ids hashed with the config's salt (the collection name by default); no text, no id in clear
    assert verb.attributes["user.hash"] == _hash(USER) and "user.id" not in verb.attributes
    assert verb.attributes["hippocampus.agent.hash"] == _hash(AGENT) and "gen_ai.agent.id" not in verb.attributes
    text = _values(found)
    assert USER not in text and AGENT not in text and "jasmine" not in text


def test_texts_and_plain_ids_only_when_the_config_says(memory: Memory, spans) -> None:
    before = memory.config
    memory.config = before.model_copy(update={"trace_content": True, "trace_ids": "plain"})
    try:
        _fresh(spans)
        hits = memory.search("green tea", user_id=USER)
    finally:
        memory.config = before
    found = list(spans.get_finished_spans())
    (verb,) = _named(found, "hippocampus.search")
    assert verb.attributes["user.id"] == USER and verb.attributes["hippocampus.query"] == "green tea"
    assert verb.attributes["hippocampus.result.count"] == len(hits.all) >= 1
    assert [s for s in found if s.name.startswith(("search ", "query "))], "the store's reads are spans"
    _fresh(spans)
    memory.search("green tea", user_id=USER)
    assert "green tea" not in _values(list(spans.get_finished_spans()))


def test_an_error_records_its_type_never_its_message(memory: Memory, spans) -> None:
    _fresh(spans)
    with pytest.raises(NotFound) as caught:
        memory.get(987654321, user_id=USER)
    (verb,) = _named(list(spans.get_finished_spans()), "hippocampus.get")
    assert verb.status.status_code is StatusCode.ERROR and verb.status.description == "NotFound"
    assert verb.attributes["error.type"] == "hippocampus.errors.NotFound"
    assert [e.attributes.get("exception.type") for e in verb.events] == ["hippocampus.errors.NotFound"]
    assert str(caught.value) not in _values([verb]) and "987654321" not in _values([verb])
    assert verb.attributes["hippocampus.memory.hash"] == _hash("987654321")


def test_the_llm_client_reports_attempts_format_and_tokens(memory: Memory, spans) -> None:
    """The real client over HTTP: json_schema refused (llama.cpp's way), one unusable reply, then an answer."""
    reply = json.dumps(DECISION)
    with OpenAIStub(chat=lambda body: reply, refuse_formats={"json_schema"}) as stub:
        stub.faults += [Fault(), Fault(content="not json at all")]  # the refusal first, then the unusable reply
        scripted = memory.llm
        memory.llm = LLMClient(model="stub-model", base_url=stub.base_url, retry_base_delay_s=0.0)
        try:
            _fresh(spans)
            memory.add("I drink oolong in the evening", user_id=USER, infer=True)
        finally:
            memory.llm = scripted
    (llm,) = _named(list(spans.get_finished_spans()), "chat stub-model")
    assert llm.attributes["gen_ai.provider.name"] == "openai"
    assert llm.attributes["hippocampus.llm.response_format"] == "json_object_schema"  # negotiated down
    assert llm.attributes["hippocampus.llm.attempts"] == 3 and llm.attributes["hippocampus.llm.retries"] == 2
    assert llm.attributes["gen_ai.usage.input_tokens"] == 0 and llm.attributes["gen_ai.usage.output_tokens"] == 0
    assert len(stub.requests) == 3


def _ancestors(span: ReadableSpan, found: list[ReadableSpan]) -> list[int]:
    by_id = {s.context.span_id: s for s in found}
    out, parent = [], span.parent
    while parent is not None:
        out.append(parent.span_id)
        parent = by_id[parent.span_id].parent if parent.span_id in by_id else None
    return out


def _with_request_span(spans: InMemorySpanExporter) -> list[ReadableSpan]:
    """The spans once the request's own has ended: it ends after the answer's last byte went out."""
    deadline = time.monotonic() + 30  # turns a hang into a failure; never asserts speed
    while time.monotonic() < deadline and not any(
            s.kind is trace.SpanKind.SERVER and s.instrumentation_scope.name == "hippocampus" for s in spans.get_finished_spans()):
        time.sleep(0.01)
    return list(spans.get_finished_spans())


def test_a_request_joins_the_callers_trace_on_rest_and_mcp(memory: Memory, spans) -> None:
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    app = create_app(memory, close_memory=False, ui=False)
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        _fresh(spans)
        answer = http.post("/v1/search", json={"query": "tea", "user_id": USER},
                           headers={"traceparent": f"00-{trace_id}-{parent}-01"})
        assert answer.status_code == 200
        rest = _with_request_span(spans)
        _fresh(spans)
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": "tea", "user_id": USER}}}
        answer = http.post("/mcp", json=call, headers={"Accept": "application/json, text/event-stream",
                                                       "traceparent": f"00-{trace_id}-{'1' * 16}-01"})
        assert answer.status_code == 200 and "error" not in answer.json()
        mcp = _with_request_span(spans)
    for found, route, caller in ((rest, "/v1/search", parent), (mcp, "/mcp", "1" * 16)):
        # ours; FastAPI's native request span (raw path and query) is off, the MCP SDK's tool span may sit between
        (request,) = [s for s in found if s.kind is trace.SpanKind.SERVER and s.instrumentation_scope.name != "mcp-python-sdk"]
        assert request.instrumentation_scope.name == "hippocampus"
        assert request.name == f"POST {route}" and request.attributes["http.route"] == route
        assert request.attributes["http.response.status_code"] == 200
        assert format(request.context.trace_id, "032x") == trace_id and format(request.parent.span_id, "016x") == caller
        (verb,) = _named(found, "hippocampus.search")
        assert request.context.span_id in _ancestors(verb, found) and verb.context.trace_id == request.context.trace_id
        assert USER not in _values(found)


def test_tracing_off_makes_no_span_and_no_proxy(db: Path, spans) -> None:
    embedder = DeterministicEmbedder()
    with Memory(milvus_uri=str(db), collection_name="untraced", embedder=embedder,
                llm=ScriptedChatModel(replies={"WriteDecision": DECISION}), llm_gate="off") as m:
        assert m.embedder is embedder and not isinstance(m.ctx.embedder, TracedEmbedder)
        _fresh(spans)
        assert m.add(TURN, user_id=USER, infer=True).stored
        assert m.search("tea", user_id=USER).all
        assert list(spans.get_finished_spans()) == []


GUARD = """
import sys
sys.modules["opentelemetry"] = None  # as if the [otel] extra were not installed: importing it raises ImportError
from hippocampus import Memory, MemoryConfig
from hippocampus.observability import tracing
from hippocampus.testing import DeterministicEmbedder, ScriptedChatModel
from hippocampus.llm import Prompt
from pydantic import BaseModel
config = MemoryConfig(tracing=True)
assert tracing.AVAILABLE is False and tracing.enabled(config) is False
assert not getattr(Memory.add, "_hippocampus_traced", False)  # no verb wrapped
embedder = DeterministicEmbedder(dim=8)
assert tracing.traced_embedder(embedder, config) is embedder  # no proxy
assert tracing.store_call(lambda *a, **k: (a, k), "insert", "memories", data=[1]) == (("memories",), {"data": [1]})
class Answer(BaseModel):
    ok: bool
llm = ScriptedChatModel(replies={"Answer": {"ok": True}})
assert tracing.chat_json(llm, Prompt(name="p", system="s", user="u"), Answer).ok and llm.calls == 1
print("ok")
"""


def test_without_opentelemetry_tracing_is_a_warning_and_nothing_else() -> None:
    done = subprocess.run([sys.executable, "-c", GUARD], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok" and "opentelemetry is not installed" in done.stderr


def test_the_cross_language_embedder_is_traced_like_the_other(db: Path, spans) -> None:
    """The second embedder (embeddings/crosslang.py), made by the store rather than passed in: its encode on a
    write and on a cross-script question is a child span of the verb, with its model and dimension, no text
    (an add embeds its cross vector in its own call, on a local store as on a server)."""
    from hippocampus.embeddings.crosslang import DIM, MODEL_NAME

    with Memory(milvus_uri=str(db), collection_name="traced_cross", embedder=DeterministicEmbedder(), tracing=True,
                crosslang_embedder="use-multilingual", llm_gate="off") as m:
        for verb_name, call, embeds in (("add", lambda: m.add("My sister lives in Lisbon", user_id=USER), 1),
                                        ("search", lambda: m.search("我的姐姐住在哪里", user_id=USER), 1)):
            _fresh(spans)
            call()
            found = list(spans.get_finished_spans())
            (verb,) = _named(found, f"hippocampus.{verb_name}")
            cross = [s for s in found if s.name == f"embeddings {MODEL_NAME}"]
            assert len(cross) == embeds and all(s.parent is not None and s.parent.span_id == verb.context.span_id for s in cross)
            for span in cross:
                assert span.attributes["gen_ai.request.model"] == MODEL_NAME
                assert span.attributes["gen_ai.embeddings.dimension.count"] == DIM
                assert span.attributes["hippocampus.embedding.texts"] == 1
            assert "Lisbon" not in _values(found) and "姐姐" not in _values(found)
        _fresh(spans)
        assert m.ctx.store.cross.embedder.encode(["outside any verb"]).shape == (1, DIM)
        assert list(spans.get_finished_spans()) == []  # outside a verb: the plain call
