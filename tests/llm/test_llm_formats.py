"""`llm_response_format: auto`: the client steps down from json_schema when a server refuses the
format (llama-cpp-python's 500, a plain server's 400), once per server and model, without
burning retries, and never mistakes a real error for a refusal. Real HTTP against the stub."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from hippocampus import LLMError, Memory, MemoryConfig
from hippocampus.llm import LLMClient, Prompt, formats
from hippocampus.llm.factory import make_llm
from tests.openai_stub import PLAIN_REFUSAL, Fault, OpenAIStub, llama_cpp_refusal

GOOD = {"name": "redis", "count": 3}
SCHEMA_IN_PROMPT = "Answer with one JSON object matching this JSON schema:"


class Answer(BaseModel):
    name: str
    count: int


@pytest.fixture(autouse=True)
def _fresh_negotiation():
    """The negotiated modes live for the process; a stub's port may be reused by a later test."""
    formats.forget()
    yield
    formats.forget()


@pytest.fixture
def negotiation_log(caplog):
    caplog.set_level(logging.INFO, logger="hippocampus.llm")
    return lambda: [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]


def prompt() -> Prompt:
    return Prompt(name="test", system="You answer in JSON.", user="How many redis nodes?")


def client(stub: OpenAIStub, **kw: Any) -> LLMClient:
    params: dict[str, Any] = {"model": "qwen", "base_url": stub.base_url, "retry_base_delay_s": 0, "max_retries": 3}
    params.update(kw)
    return LLMClient(**params)


def posts(stub: OpenAIStub) -> list[dict[str, Any]]:
    return [body for path, body in stub.requests if path.endswith("/chat/completions")]


def sent_modes(stub: OpenAIStub) -> list[str]:
    """The mode each chat request used, read back from its response_format."""
    out = []
    for body in posts(stub):
        fmt = body.get("response_format")
        out.append("none" if fmt is None else fmt["type"] + ("_schema" if "schema" in fmt else ""))
    return out


def good(body: dict[str, Any]) -> str:
    return json.dumps(GOOD)


# ------------------------------------------------------------------ stepping down
def test_llama_like_server_steps_down_to_json_object_schema_once(negotiation_log):
    with OpenAIStub(chat=good, refuse_formats={"json_schema"}) as stub:
        assert client(stub).chat_json(prompt(), Answer) == Answer(**GOOD)
        assert sent_modes(stub) == ["json_schema", "json_object_schema"]  # the refusal was not retried
        assert set(posts(stub)[1]["response_format"]["schema"]["properties"]) == {"name", "count"}
        assert SCHEMA_IN_PROMPT not in posts(stub)[1]["messages"][0]["content"]  # the server enforces it

        # cached per (base_url, model) for the process: a new client sends the working format first
        again = client(stub)
        assert again.chat_json(prompt(), Answer) == Answer(**GOOD)
        assert again.chat_json(prompt(), Answer) == Answer(**GOOD)
        assert sent_modes(stub)[2:] == ["json_object_schema", "json_object_schema"]
        assert negotiation_log() == [f"LLM qwen at {stub.base_url} refuses json_schema; using json_object_schema"]

        # another model on the same server negotiates for itself
        client(stub, model="other").chat_json(prompt(), Answer)
        assert sent_modes(stub)[4:] == ["json_schema", "json_object_schema"]


def test_plain_server_steps_down_to_none_with_the_schema_in_the_prompt(negotiation_log):
    with OpenAIStub(chat=good, refuse_any_format=True) as stub:
        llm = client(stub)
        assert llm.chat_json(prompt(), Answer) == Answer(**GOOD)
        assert sent_modes(stub) == ["json_schema", "json_object_schema", "json_object", "none"]
        system = posts(stub)[-1]["messages"][0]["content"]
        assert system.startswith("You answer in JSON.") and SCHEMA_IN_PROMPT in system and '"count"' in system
        assert negotiation_log() == [
            f"LLM qwen at {stub.base_url} refuses json_schema, json_object_schema, json_object; using none"
        ]
        llm.chat_json(prompt(), Answer)
        assert sent_modes(stub)[4:] == ["none"]
        assert llm.calls == 5


def test_server_taking_plain_json_object_stops_there_with_the_schema_in_the_prompt(negotiation_log):
    refusal = {"error": {"message": "response_format: unsupported type or field", "type": "invalid_request_error"}}
    with OpenAIStub(chat=good) as stub:
        stub.faults += [Fault(status=400, body=refusal), Fault(status=422, body=refusal)]
        assert client(stub).chat_json(prompt(), Answer) == Answer(**GOOD)
        assert sent_modes(stub) == ["json_schema", "json_object_schema", "json_object"]
        assert SCHEMA_IN_PROMPT in posts(stub)[-1]["messages"][0]["content"]
        assert negotiation_log() == [f"LLM qwen at {stub.base_url} refuses json_schema, json_object_schema; using json_object"]


def test_concurrent_first_calls_negotiate_to_one_mode_and_one_log_line(negotiation_log):
    with OpenAIStub(chat=good, refuse_formats={"json_schema"}) as stub:
        llm = client(stub)
        results: list[Any] = []
        threads = [threading.Thread(target=lambda: results.append(llm.chat_json(prompt(), Answer))) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [Answer(**GOOD)] * 6
        assert formats.start_mode(stub.base_url, "qwen") == "json_object_schema"
        assert len(negotiation_log()) == 1


def test_memory_add_infer_is_stored_not_pending_against_a_llama_like_server(shared_db, embedder, negotiation_log):
    things = iter(["adopted a grey kitten named Miso", "Miso sleeps on the sofa"] * 3)  # a repeated thing is one memory

    def chat(body: dict[str, Any]) -> str:
        props = ((body.get("response_format") or {}).get("schema") or {}).get("properties", {})
        if "write_episodic" in props:
            return json.dumps({"write_episodic": True, "context": "home", "thing": next(things)})
        return json.dumps({"facts": []}) if "facts" in props else "{}"

    with OpenAIStub(chat=chat, refuse_formats={"json_schema"}) as stub:
        with Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder,
                    llm_provider="openai", llm_base_url=stub.base_url, llm_model="qwen2.5-coder-1.5b",
                    llm_retry_base_delay_s=0) as memory:
            first = memory.add("We adopted a grey kitten named Miso", user_id="alice", chat_id="c1", infer=True)
            second = memory.add("Miso sleeps on the sofa", user_id="alice", chat_id="c1", infer=True)
        assert first.stored and not first.pending_decision, first.reason
        assert second.stored and not second.pending_decision, second.reason
        assert sent_modes(stub).count("json_schema") == 1  # refused once, then never asked again
        assert len(negotiation_log()) == 1


# ------------------------------------------------------------------ what is not stepped down
def test_config_defaults_to_auto_and_an_explicit_format_wins():
    assert MemoryConfig().llm_response_format == "auto"
    cfg = MemoryConfig(llm_provider="openai", llm_base_url="http://127.0.0.1:9/v1", llm_response_format="json_schema")
    assert make_llm(cfg).response_format == "json_schema"  # type: ignore[attr-defined]


def test_an_explicit_format_is_never_stepped_down(negotiation_log):
    with OpenAIStub(chat=good, refuse_formats={"json_schema"}) as stub:
        client(stub).chat_json(prompt(), Answer)  # auto negotiates json_object_schema for this server
        stub.requests.clear()
        with pytest.raises(LLMError) as info:
            client(stub, response_format="json_schema").chat_json(prompt(), Answer)
        assert sent_modes(stub) == ["json_schema"]  # a refusal is not transient: no retry either
        assert info.value.attempts == 1
        assert "refuses response_format json_schema" in str(info.value) and "auto" in str(info.value)
        assert len(negotiation_log()) == 1  # only the auto client's line


@pytest.mark.parametrize(
    "fault,attempts",
    [
        (Fault(status=401, body={"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}}), 1),
        (Fault(status=404, body={"error": {"message": "The model `nope` does not exist", "type": "invalid_request_error",
                                           "code": "model_not_found"}}), 1),
        (Fault(status=500, body={"error": {"message": "llama_decode returned -1", "type": "internal_server_error"}}), 3),
        (Fault(status=422, body={"error": {"message": "1 validation error: messages.0.content\n  Input should be a valid string"}}), 1),
        (Fault(delay_s=0.6), 3),
    ],
    ids=["401-key", "404-model", "500-crash", "422-messages", "timeout"],
)
def test_a_real_error_is_not_mistaken_for_a_refusal(fault: Fault, attempts: int, negotiation_log):
    with OpenAIStub(chat=good) as stub:
        stub.faults += [fault] * attempts
        with pytest.raises(LLMError) as info:
            client(stub, timeout_s=0.2).chat_json(prompt(), Answer)
        assert info.value.attempts == attempts  # the configured retries, as before
        assert sent_modes(stub) == ["json_schema"] * attempts
        assert formats.start_mode(stub.base_url, "qwen") == "json_schema"
        assert negotiation_log() == []


# ------------------------------------------------------------------ the pure parts
def _status_error(status: int, payload: dict[str, Any]) -> openai.APIStatusError:
    response = httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"), json=payload)
    return openai.OpenAI(api_key="x", base_url="http://127.0.0.1/v1")._make_status_error_from_response(response)


def test_is_format_refusal_reads_status_param_and_text():
    assert formats.is_format_refusal(_status_error(500, llama_cpp_refusal("json_schema")))
    assert formats.is_format_refusal(_status_error(400, PLAIN_REFUSAL))
    assert formats.is_format_refusal(_status_error(400, {"error": {"message": "bad value", "param": "response_format"}}))
    assert not formats.is_format_refusal(_status_error(401, {"error": {"message": "response_format"}}))
    assert not formats.is_format_refusal(_status_error(503, llama_cpp_refusal("json_schema")))
    assert not formats.is_format_refusal(_status_error(500, {"error": {"message": "Input should be a valid string"}}))
    assert not formats.is_format_refusal(ValueError("response_format"))
    assert [formats.next_mode(m) for m in formats.LADDER] == ["json_object_schema", "json_object", "none", None]
