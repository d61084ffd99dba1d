"""No data lost under LLM and embedding faults, driven over HTTP through the local OpenAI-compatible stub
(tests/openai_stub.py), so the real LLMClient, OpenAIEmbedder and their retries run.

Faults: timeouts, 429, 500, 503, empty replies, prose, invalid JSON, schema-invalid JSON, dropped
connections. With llm_max_retries=2 a single fault is retried away; two in a row exhaust the
retries, and then: add(infer=True) keeps the user's turn (stored raw, pending_decision=true),
consolidation skips the pair and counts the error, and nothing is deleted without its replacement.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hippocampus import EmbeddingError, HistoryAction, Memory

from ._support import COUNTS

stub_mod = pytest.importorskip("tests.openai_stub", reason="the stub server lands with the core helper")
OpenAIStub, Fault = stub_mod.OpenAIStub, stub_mod.Fault

T0 = 1_767_258_000
USER = "fault-user"

LLM_FAULTS = {
    "429": lambda: Fault(status=429),
    "500": lambda: Fault(status=500),
    "503": lambda: Fault(status=503),
    "timeout": lambda: Fault(delay_s=1.5),
    "drop": lambda: Fault(drop=True),
    "empty": lambda: Fault(content=""),
    "prose": lambda: Fault(content="Sure! I think you should remember that."),
    "invalid-json": lambda: Fault(content='{"write_episodic": tru'),
    "schema-invalid": lambda: Fault(content='{"unexpected": [1, 2, 3]}'),
}
EMBED_FAULTS = {k: LLM_FAULTS[k] for k in ("429", "500", "503", "timeout", "drop")}


def _data(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return " ".join(re.findall(r"<data>(.*?)</data>", user, re.S))


def _schema(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name", "")


def healthy_llm(body: dict[str, Any]) -> str:
    """A well-behaved model: remembers every turn, merges pairs about the same kitten, no facts."""
    schema, data = _schema(body), _data(body)
    if schema == "WriteDecision":
        return json.dumps({"write_episodic": True, "context": "home", "thing": "", "time": "", "who": ""})
    if schema == "MergeResult":
        texts = re.findall(r'"text": "([^"]*)"', data)
        same = len(texts) == 2 and all("kitten" in t for t in texts)
        merged = max(texts, key=len) if same else ""
        return json.dumps({"same_event": same, "text": merged, "context": "home", "thing": merged, "reason": "stub"})
    if schema == "SeparationResult":
        texts = re.findall(r'"text": "([^"]*)"', data) + ["", ""]
        return json.dumps({"text_a": texts[0], "text_b": texts[1], "context_a": "", "context_b": "", "reason": "stub"})
    if schema == "SemanticExtraction":
        return json.dumps({"facts": []})
    return "{}"


@pytest.fixture
def stub():
    with OpenAIStub(chat=healthy_llm) as server:
        yield server


def _memory(path: str, stub, embedder=None, **kw: Any) -> Memory:
    settings: dict[str, Any] = dict(
        milvus_uri=path, llm_provider="openai", llm_base_url=stub.base_url, llm_model="stub-chat",
        llm_max_retries=2, llm_retry_base_delay_s=0.0, llm_timeout_s=0.5, t_merge_high=0.8, t_amb_low=0.7,
    )
    settings.update(kw)
    return Memory(embedder=embedder, **settings) if embedder is not None else Memory(**settings)


def _inject(stub, make, n: int) -> None:
    stub.faults.extend(make() for _ in range(n))
    COUNTS["faults injected"] += n


def assert_nothing_lost(memory: Memory, original: dict[int, str]) -> None:
    """Each original memory is still there, or its history says it was merged into a record that is."""
    live = {r.id: r for r in memory.get_all(USER)}
    for mid, text in original.items():
        if mid in live:
            continue
        events = memory.history(mid, user_id=USER)
        merged = [e for e in events if e.action is HistoryAction.MERGED]
        assert merged, f"memory {mid} ({text!r}) vanished without a merge"
        into = merged[-1].details.get("merged_into")
        assert into in live, f"memory {mid} was merged into {into}, which does not exist"


@pytest.mark.parametrize("fault", list(LLM_FAULTS))
def test_add_infer_keeps_the_turn_under_llm_faults(stub, fresh_path: str, embedder, fault: str):
    with _memory(fresh_path, stub, embedder) as memory:
        # one fault: retried away, the turn is decided and stored normally
        _inject(stub, LLM_FAULTS[fault], 1)
        ok = memory.add("We adopted a grey kitten named Miso", user_id=USER, chat_id="c1", ts=T0, infer=True)
        assert ok.stored and stub.faults == []
        assert not memory.get(ok.ids[0], user_id=USER).metadata.get("pending_decision")

        # every attempt fails: the turn is still stored, raw, and marked for a later decision
        _inject(stub, LLM_FAULTS[fault], 2)
        turn = "My sister Ana moved to Lisbon last week"
        res = memory.add(turn, user_id=USER, chat_id="c2", ts=T0 + 60, infer=True)
        assert stub.faults == []  # both faults were really served
        assert res.stored and len(res.ids) == 1
        kept = memory.get(res.ids[0], user_id=USER)
        assert kept.text == turn and kept.metadata.get("pending_decision") is True
        assert [e.action for e in memory.history(kept.id, user_id=USER)] == [HistoryAction.CREATED]
        COUNTS["turns kept under LLM faults"] += 1

        # consolidation retries the decision once the model answers again, and keeps the turn
        stats = memory.consolidate(user_id=USER)
        assert stats.pending_decided == 1 and stats.errors == 0
        decided = memory.get(kept.id, user_id=USER)
        assert decided.text == turn and not decided.metadata.get("pending_decision")


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "drop", "empty", "invalid-json", "schema-invalid"])
def test_consolidation_under_llm_faults_skips_and_counts_and_deletes_nothing(stub, fresh_path: str, embedder, fault: str):
    with _memory(fresh_path, stub, embedder) as memory:
        original = {}
        for i, text in enumerate(["We adopted a grey kitten named Miso", "We adopted a grey kitten named Miso today",
                                  "Dentist appointment on Friday at 3pm"]):
            original[memory.add(text, user_id=USER, chat_id="c1", ts=T0 + 60 * i).ids[0]] = text
        rows_before = len(memory.get_all(USER))

        _inject(stub, LLM_FAULTS[fault], 60)  # more than the run can use: every call fails
        stats = memory.consolidate(user_id=USER)
        used = 60 - len(stub.faults)
        stub.faults.clear()
        COUNTS["faults injected"] -= 60 - used
        assert used >= 2 and stats.errors >= 1
        assert stats.merged == 0
        assert {r.id: r.text for r in memory.get_all(USER)} == original  # nothing deleted, nothing rewritten
        assert len(memory.get_all(USER)) == rows_before
        assert not [r for r in memory.get_all(USER) if r.metadata.get("merge_pending")]

        # the next healthy run does the work it skipped
        stats = memory.consolidate(user_id=USER)
        assert stats.errors == 0 and stats.merged == 1
        assert_nothing_lost(memory, original)


@pytest.mark.parametrize("fault", list(EMBED_FAULTS))
def test_embedding_faults_write_nothing(fresh_path: str, fault: str):
    with OpenAIStub() as stub:
        with _memory(fresh_path, stub, embedding_provider="openai", embedding_base_url=stub.base_url,
                     embedding_model="stub-embed", embedding_dim=8) as memory:
            _inject(stub, EMBED_FAULTS[fault], 1)
            first = memory.add("retried away", user_id=USER).ids[0]
            assert memory.get(first, user_id=USER).text == "retried away"
            before = memory.store.count("")
            _inject(stub, EMBED_FAULTS[fault], 2)
            with pytest.raises(EmbeddingError):
                memory.add("every attempt fails", user_id=USER)
            assert stub.faults == []
            assert memory.store.count("") == before
            assert [r.text for r in memory.get_all(USER)] == ["retried away"]
