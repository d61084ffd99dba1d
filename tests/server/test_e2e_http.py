"""End to end over HTTP: add(infer=True) -> search -> consolidate -> search through the real
LLMClient and OpenAIEmbedder, against the local OpenAI-compatible stub on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid

import pytest

from hippocampus import Memory

OpenAIStub = pytest.importorskip("tests.openai_stub", reason="tests/openai_stub.py (helper core) not landed yet").OpenAIStub

T0 = 1_767_258_000


def _embed(texts: list[str]) -> list[list[float]]:
    """Bag-of-words hashed into 8 dimensions: texts sharing most words get a high cosine."""
    out = []
    for text in texts:
        v = [0.0] * 8
        for word in re.findall(r"\w+", text.lower()):
            h = hashlib.sha256(word.encode()).digest()
            v[h[0] % 8] += 1.0 if h[1] % 2 else -1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        out.append([x / norm for x in v])
    return out


def _data(body: dict) -> str:
    """The <data> blocks of the user message: what the processors showed the model."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return " ".join(re.findall(r"<data>(.*?)</data>", user, re.S))


def _schema(body: dict) -> str:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name", "")


def _chat(body: dict) -> str:
    schema, data = _schema(body), _data(body)
    if schema == "WriteDecision":
        remember = "Miso" in data or "dentist" in data
        return json.dumps({"write_episodic": remember, "context": "home" if remember else "", "thing": "", "time": "", "who": ""})
    if schema == "SemanticExtraction":
        facts = ["The user has a grey cat named Miso"] if "Miso" in data else []
        return json.dumps({"facts": [{"fact": f} for f in facts]})
    if schema == "MergeResult":
        texts = re.findall(r'"text": "([^"]*)"', data)
        same = len(texts) == 2 and all("Miso" in t for t in texts)
        merged = max(texts, key=len) if same else ""
        return "```json\n" + json.dumps({"same_event": same, "text": merged, "context": "home", "thing": merged, "reason": "stub"}) + "\n```"
    if schema == "SeparationResult":
        texts = re.findall(r'"text": "([^"]*)"', data) + ["", ""]
        return json.dumps({"text_a": texts[0], "text_b": texts[1], "context_a": "", "context_b": "", "reason": "stub"})
    return "{}"


@pytest.fixture
def stub():
    with OpenAIStub(chat=_chat, embed=_embed) as server:
        yield server


def test_add_search_consolidate_search_over_http(stub, tmp_path):
    user = f"u-{uuid.uuid4().hex[:8]}"
    with Memory(milvus_uri=str(tmp_path / "e2e.db"), llm_provider="openai", llm_base_url=stub.base_url, llm_model="stub-chat",
                embedding_provider="openai", embedding_base_url=stub.base_url, embedding_dim=8, embedding_model="stub-embed",
                llm_retry_base_delay_s=0.0, t_merge_high=0.85, t_amb_low=0.6) as memory:
        first = memory.add("We adopted a grey kitten named Miso", user_id=user, chat_id="c1", ts=T0, infer=True)
        second = memory.add("We adopted a grey kitten named Miso today", user_id=user, chat_id="c1", ts=T0 + 300, infer=True)
        skipped = memory.add("hi, how are you?", user_id=user, chat_id="c1", ts=T0 + 400, infer=True)
        assert first.stored and second.stored and not skipped.stored
        assert skipped.reason.startswith("gate:")  # decided by the rules gate, without a model call

        before = memory.search("kitten Miso", user_id=user)
        assert {h.id for h in before.episodic} == set(first.ids + second.ids)
        assert before.semantic == []

        stats = memory.consolidate(user_id=user)
        assert stats.merged == 1 and stats.semantic_created == 1 and stats.errors == 0
        assert stats.llm_calls >= 2

        after = memory.search("kitten Miso", user_id=user)
        (merged,) = after.episodic
        assert merged.text == "We adopted a grey kitten named Miso today"
        assert sorted(merged.memory.metadata["merged_from_ids"]) == sorted(first.ids + second.ids)
        assert [h.text for h in after.semantic] == ["The user has a grey cat named Miso"]
        assert after.semantic[0].memory.metadata["source_chatid"] == "c1"

    assert any(path.endswith("/embeddings") for path, _body in stub.requests)
    schemas = [_schema(body) for path, body in stub.requests if path.endswith("/chat/completions")]
    assert schemas.count("WriteDecision") == 2 and "MergeResult" in schemas and "SemanticExtraction" in schemas
