"""LLMClient and OpenAIEmbedder against the local OpenAI-compatible stub (a real HTTP server on
127.0.0.1), so the real `openai` package, its timeouts and our tenacity retries all run."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from hippocampus import ConfigError, EmbeddingError, LLMError, Memory, MemoryConfig
from hippocampus.embeddings import OpenAIEmbedder, make_embedder
from hippocampus.llm import LLMClient, Prompt, require_key
from hippocampus.llm.factory import make_llm
from tests.openai_stub import Fault, OpenAIStub, hash_embedding

GOOD = {"name": "redis", "count": 3}


class Answer(BaseModel):
    name: str
    count: int


def prompt() -> Prompt:
    return Prompt(name="test", system="You answer in JSON.", user="How many redis nodes?")


def client(stub: OpenAIStub, **kw: Any) -> LLMClient:
    params: dict[str, Any] = {"model": "stub-model", "base_url": stub.base_url, "retry_base_delay_s": 0, "max_retries": 3}
    params.update(kw)
    return LLMClient(**params)


def chat_posts(stub: OpenAIStub) -> list[dict[str, Any]]:
    return [body for path, body in stub.requests if path.endswith("/chat/completions")]


# ------------------------------------------------------------------ chat
def test_chat_returns_the_assistant_message_and_sends_both_roles():
    with OpenAIStub(chat=lambda body: "hello " + body["messages"][1]["content"]) as stub:
        llm = client(stub)
        assert llm.chat("be brief", "world") == "hello world"
        (body,) = chat_posts(stub)
        assert body["model"] == "stub-model"
        assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "world"}]
        assert "response_format" not in body  # free chat asks for no format
        assert llm.calls == 1


# ------------------------------------------------------------------ chat_json parsing
@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(GOOD),
        "```json\n" + json.dumps(GOOD) + "\n```",
        "```\n" + json.dumps(GOOD, indent=2) + "\n```",
        "Sure! Here is the answer you asked for:\n" + json.dumps(GOOD),
        json.dumps(GOOD) + "\nI hope this helps. Let me know {if} you need more.",
        "好的，结果如下：\n```JSON\n" + json.dumps(GOOD, ensure_ascii=False) + "\n```\n以上。",
    ],
    ids=["plain", "fence-json", "fence-bare", "leading-prose", "trailing-text", "chinese-prose-fence"],
)
def test_chat_json_parses_what_models_actually_say(reply: str):
    with OpenAIStub(chat=lambda body: reply) as stub:
        answer = client(stub).chat_json(prompt(), Answer)
        assert answer == Answer(**GOOD)
        assert len(chat_posts(stub)) == 1  # no retry needed


def test_chat_json_validates_into_the_pydantic_model_with_coercion():
    with OpenAIStub(chat=lambda body: '{"name": "redis", "count": "5", "extra": true}') as stub:
        answer = client(stub).chat_json(prompt(), Answer)
        assert isinstance(answer, Answer) and answer.count == 5


@pytest.mark.parametrize(
    "fmt,expected",
    [
        ("json_schema", "json_schema"),
        ("json_object_schema", "json_object"),
        ("json_object", "json_object"),
        ("none", None),
    ],
)
def test_response_format_is_sent_in_the_request(fmt: str, expected: str | None):
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        client(stub, response_format=fmt).chat_json(prompt(), Answer)
        (body,) = chat_posts(stub)
        sent = body.get("response_format")
        if expected is None:
            assert sent is None
            return
        assert sent["type"] == expected
        if fmt == "json_schema":
            assert sent["json_schema"]["name"] == "Answer"
            assert set(sent["json_schema"]["schema"]["properties"]) == {"name", "count"}
        if fmt == "json_object_schema":
            assert set(sent["schema"]["properties"]) == {"name", "count"}


# ------------------------------------------------------------------ retries
@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_transient_http_errors_are_retried_then_succeed(status: int):
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        stub.faults.append(Fault(status=status))
        llm = client(stub)
        assert llm.chat_json(prompt(), Answer) == Answer(**GOOD)
        assert len(chat_posts(stub)) == 2
        assert llm.calls == 2


def test_two_faults_in_a_row_still_succeed_on_the_third_attempt():
    with OpenAIStub(chat=lambda body: "fine") as stub:
        stub.faults += [Fault(status=429), Fault(status=500)]
        assert client(stub, max_retries=3).chat("s", "u") == "fine"
        assert len(chat_posts(stub)) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(status: int):
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        stub.faults.append(Fault(status=status))
        with pytest.raises(LLMError) as info:
            client(stub).chat_json(prompt(), Answer)
        assert info.value.attempts == 1
        assert len(chat_posts(stub)) == 1
        assert str(status) in str(info.value.last_error)


def test_timeout_is_retried_then_succeeds():
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        stub.faults.append(Fault(delay_s=1.5))
        llm = client(stub, timeout_s=0.3)
        assert llm.chat_json(prompt(), Answer) == Answer(**GOOD)
        assert len(chat_posts(stub)) == 2


def test_dropped_connection_is_retried_then_succeeds():
    with OpenAIStub(chat=lambda body: "after the drop") as stub:
        stub.faults.append(Fault(drop=True))
        assert client(stub).chat("s", "u") == "after the drop"
        assert len(chat_posts(stub)) == 2


def test_after_the_retries_llm_error_names_model_attempts_and_last_error():
    with OpenAIStub() as stub:
        stub.faults += [Fault(status=503) for _ in range(3)]
        with pytest.raises(LLMError) as info:
            client(stub, model="qwen-test", max_retries=3).chat_json(prompt(), Answer)
        err = info.value
        assert err.model == "qwen-test" and err.attempts == 3
        assert "503" in str(err.last_error)
        message = str(err)
        assert "qwen-test" in message and "3 attempt" in message and "503" in message
        assert len(chat_posts(stub)) == 3


def test_timeouts_on_every_attempt_end_in_llm_error():
    with OpenAIStub() as stub:
        stub.faults += [Fault(delay_s=1.0) for _ in range(2)]
        with pytest.raises(LLMError) as info:
            client(stub, timeout_s=0.2, max_retries=2).chat("s", "u")
        assert info.value.attempts == 2
        assert "timed out" in str(info.value.last_error).lower()


@pytest.mark.parametrize(
    "bad",
    ["", "   ", "I'd rather not answer in JSON.", '{"name": "redis", "count": ', '{"name": "redis"}', '{"name": 1, "count": "many"}', "[1, 2]"],
    ids=["empty", "blank", "prose", "truncated", "missing-field", "wrong-types", "array"],
)
def test_unusable_reply_is_retried_then_succeeds(bad: str):
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        stub.faults.append(Fault(content=bad))
        assert client(stub).chat_json(prompt(), Answer) == Answer(**GOOD)
        assert len(chat_posts(stub)) == 2


@pytest.mark.parametrize("bad", ['{"name": "redis", "count": ', '{"unexpected": [1, 2, 3]}'], ids=["invalid", "schema-invalid"])
def test_unusable_replies_on_every_attempt_end_in_llm_error(bad: str):
    with OpenAIStub(chat=lambda body: bad) as stub:
        with pytest.raises(LLMError) as info:
            client(stub, max_retries=3).chat_json(prompt(), Answer)
        assert info.value.attempts == 3
        assert len(chat_posts(stub)) == 3
        assert "stub-model" in str(info.value)


# ------------------------------------------------------------------ max_tokens
@pytest.mark.parametrize("cap", [2048, 64, None], ids=["default", "set", "server-default"])
def test_each_reply_is_capped_at_max_tokens(cap: int | None):
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        llm = client(stub) if cap == 2048 else client(stub, max_tokens=cap)
        llm.chat_json(prompt(), Answer)
        llm.chat("s", "u")
        for body in chat_posts(stub):
            assert body.get("max_tokens") == cap


def test_a_json_reply_cut_at_max_tokens_is_one_clear_error_without_retries():
    with OpenAIStub() as stub:
        stub.faults.append(Fault(content='{"name": "redis", "count": 1', finish_reason="length"))
        with pytest.raises(LLMError) as info:
            client(stub, max_tokens=16).chat_json(prompt(), Answer)
        assert "max_tokens=16" in str(info.value) and "llm_max_tokens" in str(info.value)
        assert len(chat_posts(stub)) == 1  # the same request would be cut the same way


def test_a_complete_json_reply_that_reached_max_tokens_is_kept():
    with OpenAIStub() as stub:
        stub.faults.append(Fault(content=json.dumps(GOOD), finish_reason="length"))
        assert client(stub).chat_json(prompt(), Answer) == Answer(**GOOD)


def test_make_llm_builds_a_client_for_a_loopback_endpoint_without_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_LLM_API_KEY", raising=False)
    with OpenAIStub(chat=lambda body: json.dumps(GOOD)) as stub:
        cfg = MemoryConfig(llm_provider="openai", llm_base_url=stub.base_url, llm_model="local", llm_retry_base_delay_s=0)
        llm = make_llm(cfg)
        assert isinstance(llm, LLMClient)
        assert llm.chat_json(prompt(), Answer) == Answer(**GOOD)
        assert chat_posts(stub)[0]["model"] == "local"
        assert chat_posts(stub)[0]["max_tokens"] == cfg.llm_max_tokens == 2048


# ------------------------------------------------------------------ API keys
@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://10.0.0.5:8000/v1", "https://openrouter.ai/api/v1"])
def test_require_key_refuses_a_remote_endpoint_without_a_key(url: str):
    with pytest.raises(ConfigError, match="API key"):
        require_key(url, "", "llm")
    assert require_key(url, "sk-test", "llm") == "sk-test"


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1"])
def test_require_key_lets_a_loopback_endpoint_go_without_a_key(url: str):
    assert require_key(url, "", "embedding") == ""


def test_memory_with_a_remote_llm_and_no_key_is_a_config_error(fresh_path: str, embedder, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_LLM_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="HIPPOCAMPUS_LLM_API_KEY"):
        Memory(milvus_uri=fresh_path, embedder=embedder, llm_provider="openai", llm_base_url="https://api.example.com/v1")


# ------------------------------------------------------------------ OpenAIEmbedder
def embedder_for(stub: OpenAIStub, **kw: Any) -> OpenAIEmbedder:
    params: dict[str, Any] = {"model": "stub-embed", "dim": 8, "base_url": stub.base_url, "retry_base_delay_s": 0}
    params.update(kw)
    return OpenAIEmbedder(**params)


def embed_posts(stub: OpenAIStub) -> list[list[str]]:
    return [body["input"] for path, body in stub.requests if path.endswith("/embeddings")]


def test_embedder_batches_and_keeps_input_order():
    texts = [f"memory number {i} 记忆" for i in range(7)]
    with OpenAIStub() as stub:
        vectors = embedder_for(stub, batch_size=3).encode(texts)
        assert [len(batch) for batch in embed_posts(stub)] == [3, 3, 1]
        assert sum(embed_posts(stub), []) == texts
        assert vectors.shape == (7, 8)
        assert np.allclose(vectors, np.asarray([hash_embedding(t) for t in texts]), atol=1e-6)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_embedder_orders_vectors_by_index_not_by_arrival():
    texts = ["alpha", "beta", "gamma"]
    shuffled = [{"object": "embedding", "index": i, "embedding": hash_embedding(texts[i])} for i in (2, 0, 1)]
    with OpenAIStub() as stub:
        stub.faults.append(Fault(status=200, body={"object": "list", "data": shuffled, "model": "stub-embed",
                                                   "usage": {"prompt_tokens": 0, "total_tokens": 0}}))
        vectors = embedder_for(stub).encode(texts)
        assert np.allclose(vectors, np.asarray([hash_embedding(t) for t in texts]), atol=1e-6)


def test_embedder_applies_role_prefixes():
    with OpenAIStub() as stub:
        emb = embedder_for(stub, query_prefix="query: ", passage_prefix="passage: ")
        q = emb.encode(["where is redis"], role="query")
        p = emb.encode(["redis is in /opt"], role="passage")
        assert embed_posts(stub) == [["query: where is redis"], ["passage: redis is in /opt"]]
        assert np.allclose(q[0], hash_embedding("query: where is redis"), atol=1e-6)
        assert p.shape == (1, 8)


def test_embedder_dimension_mismatch_is_an_embedding_error():
    with OpenAIStub(embed=lambda texts: [hash_embedding(t, dim=4) for t in texts]) as stub:
        with pytest.raises(EmbeddingError, match="4-d"):
            embedder_for(stub, dim=8).encode(["hello"])


def test_embedder_wrong_vector_count_is_an_embedding_error():
    with OpenAIStub(embed=lambda texts: [hash_embedding(t) for t in texts][:-1]) as stub:
        with pytest.raises(EmbeddingError, match="1 vectors for 2 texts"):
            embedder_for(stub).encode(["one", "two"])


@pytest.mark.parametrize("fault", [Fault(status=429), Fault(status=500), Fault(drop=True), Fault(delay_s=1.0)], ids=["429", "500", "drop", "timeout"])
def test_embedder_retries_transient_errors(fault: Fault):
    with OpenAIStub() as stub:
        stub.faults.append(fault)
        vectors = embedder_for(stub, timeout_s=0.3).encode(["retry me"])
        assert np.allclose(vectors[0], hash_embedding("retry me"), atol=1e-6)
        assert len(embed_posts(stub)) == 2


def test_embedder_gives_up_with_embedding_error_and_does_not_retry_400():
    with OpenAIStub() as stub:
        stub.faults += [Fault(status=500)] * 3
        with pytest.raises(EmbeddingError, match="stub-embed"):
            embedder_for(stub, max_retries=3).encode(["x"])
        assert len(embed_posts(stub)) == 3
    with OpenAIStub() as stub:
        stub.faults.append(Fault(status=400))
        with pytest.raises(EmbeddingError):
            embedder_for(stub).encode(["x"])
        assert len(embed_posts(stub)) == 1


def test_make_embedder_for_a_loopback_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_EMBEDDING_API_KEY", raising=False)
    with OpenAIStub() as stub:
        cfg = MemoryConfig(embedding_provider="openai", embedding_base_url=stub.base_url, embedding_model="stub-embed",
                           embedding_dim=8, embedding_batch_size=2, llm_retry_base_delay_s=0)
        emb = make_embedder(cfg)
        assert emb.dim == 8 and emb.model_name == "stub-embed"
        assert emb.encode(["a", "b", "c"]).shape == (3, 8)
        assert len(embed_posts(stub)) == 2


def test_memory_with_a_remote_embedder_and_no_key_is_a_config_error(fresh_path: str, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_EMBEDDING_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="HIPPOCAMPUS_EMBEDDING_API_KEY"):
        Memory(milvus_uri=fresh_path, embedding_provider="openai", embedding_base_url="https://api.example.com/v1", embedding_dim=8)
