"""hippocampus.testing: the shipped doubles behave as their docstrings say, and the documented
example runs as written (real milvus-lite in tmp_path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

import hippocampus.testing as testing
from hippocampus import Memory
from hippocampus.embeddings import Embedder
from hippocampus.errors import LLMError
from hippocampus.llm import ChatModel, Prompt
from hippocampus.processors.results import MergeResult, WriteDecision
from hippocampus.testing import DeterministicEmbedder, ScriptedChatModel

YES = json.dumps({"write_episodic": True, "thing": "likes tea"})
NO = json.dumps({"write_episodic": False})
TEXTS = ["I like green tea", "green tea in the morning", "我姐姐住在上海", "the train leaves at 9", ""]


def _prompt(name: str = "write_decider", **inputs) -> Prompt:
    return Prompt(name=name, system="sys", user=f"user {inputs}", inputs=inputs)


# ------------------------------------------------------------------ DeterministicEmbedder
@pytest.mark.parametrize("lexical", [True, False])
@pytest.mark.parametrize("dim", [8, 384])
def test_embedder_gives_unit_rows_of_its_declared_dim_the_same_every_call(dim: int, lexical: bool) -> None:
    e = DeterministicEmbedder(dim, lexical=lexical)
    first = e.encode(TEXTS)
    assert isinstance(e, Embedder) and e.dim == dim and first.shape == (len(TEXTS), dim) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, e.encode(TEXTS)) and np.array_equal(first, DeterministicEmbedder(dim, lexical=lexical).encode(TEXTS))
    assert np.array_equal(first[2:3], e.encode([TEXTS[2]], role="query"))  # one text alone, either role: the same row
    assert e.encode([]).shape == (0, dim) and e.calls == 4


def test_lexical_vectors_follow_shared_words_and_whole_text_vectors_do_not() -> None:
    words, whole = DeterministicEmbedder(), DeterministicEmbedder(384, lexical=False)
    a, b, c = words.encode(["I like green tea", "green tea please", "the train leaves at nine"])
    assert a @ b > 0.3 and abs(a @ c) < 0.2  # two shared words vs none
    x, y = whole.encode(["I like green tea", "I like green tea."])
    assert abs(x @ y) < 0.3  # one character apart: unrelated directions
    assert words.model_name != whole.model_name != DeterministicEmbedder(8, lexical=False).model_name
    assert DeterministicEmbedder(model_name="mine/model").model_name == "mine/model"
    with pytest.raises(ValueError, match="dim"):
        DeterministicEmbedder(0)


def test_embedder_is_stable_across_processes() -> None:
    """blake2b / sha256 of the text, not Python's salted hash(): another process, another
    PYTHONHASHSEED, the same vectors (a store written by one process is searched by another)."""
    code = textwrap.dedent(f"""
        import sys
        from hippocampus.testing import DeterministicEmbedder
        texts = {TEXTS!r}
        sys.stdout.write(DeterministicEmbedder().encode(texts).tobytes().hex() + " "
                         + DeterministicEmbedder(8, lexical=False).encode(texts).tobytes().hex())
    """)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    assert out == [DeterministicEmbedder().encode(TEXTS).tobytes().hex(),
                   DeterministicEmbedder(8, lexical=False).encode(TEXTS).tobytes().hex()]


# ------------------------------------------------------------------ ScriptedChatModel
def test_script_is_answered_in_order_and_recorded() -> None:
    llm = ScriptedChatModel([YES, NO])
    assert isinstance(llm, ChatModel)
    first = llm.chat_json(_prompt(turn=1), WriteDecision)
    second = llm.chat_json(_prompt(turn=2), WriteDecision)
    assert (first.write_episodic, first.thing, second.write_episodic) == (True, "likes tea", False)
    assert (llm.calls, llm.tries, llm.schemas, llm.count("WriteDecision"), llm.count("MergeResult")) == (2, 2, ["WriteDecision"] * 2, 2, 0)
    assert [p.inputs["turn"] for p in llm.prompts] == [1, 2]


def test_a_script_that_runs_out_is_an_llm_error() -> None:
    llm = ScriptedChatModel([YES])
    llm.chat_json(_prompt(), WriteDecision)
    with pytest.raises(LLMError, match="exhausted"):
        llm.chat_json(_prompt(), WriteDecision)
    with pytest.raises(LLMError, match="exhausted"):
        ScriptedChatModel().chat_json(_prompt(), WriteDecision)
    llm.queue(NO)  # queued later: answered next
    assert llm.chat_json(_prompt(), WriteDecision).write_episodic is False


def test_unusable_replies_are_retried_like_the_client_then_fail() -> None:
    llm = ScriptedChatModel(["Sure! ```json\n" + YES + "\n```", "I think yes", YES])
    assert llm.chat_json(_prompt(), WriteDecision).thing == "likes tea"  # JSON in prose and fences is found
    assert llm.chat_json(_prompt(), WriteDecision).thing == "likes tea" and (llm.calls, llm.tries) == (2, 3)
    failing = ScriptedChatModel(["no", '{"write_episodic": "maybe"}', ConnectionError("reset")], attempts=3)
    with pytest.raises(LLMError) as err:
        failing.chat_json(_prompt(), WriteDecision)
    assert err.value.attempts == 3 and isinstance(err.value.last_error, ConnectionError) and failing.tries == 3
    with pytest.raises(LLMError) as once:  # a scripted LLMError is raised at once, no retry
        ScriptedChatModel([LLMError("scripted", 3, "HTTP 503"), YES]).chat_json(_prompt(), WriteDecision)
    assert "HTTP 503" in str(once.value)
    with pytest.raises(LLMError) as single:
        ScriptedChatModel(["not json"], default=YES, attempts=1).chat_json(_prompt(), WriteDecision)
    assert single.value.attempts == 1
    with pytest.raises(ValueError, match="attempts"):
        ScriptedChatModel(attempts=0)


def test_replies_by_schema_responders_and_default() -> None:
    seen: list[dict] = []

    def merge(inputs: dict) -> str:
        seen.append(inputs)
        return json.dumps({"same_event": True, "text": f"{inputs['a']} + {inputs['b']}"})

    class Decision(BaseModel):
        write_episodic: bool
        thing: str = ""

    llm = ScriptedChatModel(replies={"MergeResult": merge, "WriteDecision": {"write_episodic": True, "thing": "from a dict"}},
                            default=Decision(write_episodic=False))
    assert llm.chat_json(_prompt("merger", a="x", b="y"), MergeResult).text == "x + y" and seen == [{"a": "x", "b": "y"}]
    assert llm.chat_json(_prompt(), WriteDecision).thing == "from a dict"
    llm.replies["WriteDecision"] = lambda inputs: RuntimeError("model down")  # a responder's returned exception: a failed call
    with pytest.raises(LLMError, match="model down"):
        llm.chat_json(_prompt(), WriteDecision)
    del llm.replies["WriteDecision"]
    assert llm.chat_json(_prompt(), WriteDecision).write_episodic is False  # the default (a model, sent as its JSON)
    llm.queue(YES)  # the script comes before the replies by schema
    assert llm.chat_json(_prompt(), WriteDecision).thing == "likes tea"
    with pytest.raises(TypeError, match="scripted reply"):
        ScriptedChatModel([42]).chat_json(_prompt(), WriteDecision)  # type: ignore[list-item]


def test_a_responder_that_raises_is_a_bug_and_propagates() -> None:
    def broken(inputs: dict) -> str:
        raise KeyError("missing input")

    with pytest.raises(KeyError):
        ScriptedChatModel(replies={"WriteDecision": broken}).chat_json(_prompt(), WriteDecision)


def test_free_chat_takes_the_next_reply_as_text() -> None:
    llm = ScriptedChatModel(["Pasta, no peanuts."], default=lambda inputs: f"echo {inputs['user']}")
    assert llm.chat("system", "what for dinner?") == "Pasta, no peanuts."
    assert llm.chat("system", "again") == "echo again" and llm.prompts[-1].system == "system" and llm.calls == 2
    with pytest.raises(LLMError, match="exhausted"):
        ScriptedChatModel().chat("s", "u")


# ------------------------------------------------------------------ both, with a real Memory
def test_memory_adds_and_searches_with_the_doubles(tmp_path: Path) -> None:
    llm = ScriptedChatModel([YES, NO])
    with Memory(milvus_uri=str(tmp_path / "m.db"), embedder=DeterministicEmbedder(), llm=llm) as memory:
        kept = memory.add("I like tea, green mostly", user_id="u", infer=True)
        dropped = memory.add("what a day it was", user_id="u", infer=True)
        memory.add("the train leaves at nine", user_id="u")  # infer=False: no model call
        hits = memory.search("tea", user_id="u").episodic
    assert kept.stored and not dropped.stored and llm.count("WriteDecision") == 2
    assert hits[0].text == "likes tea" and hits[0].id == kept.ids[0]
    assert "I like tea, green mostly" in llm.prompts[0].user and "what a day" in llm.prompts[1].user


def test_the_documented_example_runs(tmp_path: Path) -> None:
    doc = testing.__doc__ or ""
    example = textwrap.dedent(doc.split("::\n", 1)[1].split("\n\n`", 1)[0])
    namespace: dict = {}
    exec(compile(example, "hippocampus/testing.py docstring", "exec"), namespace)
    namespace["test_a_turn_is_kept"](tmp_path)
