"""The runnable agent (issue 17, item 5): examples/chat_agent.py end to end, as a user runs it, in its
own process against the local OpenAI-compatible stub (recall rounds, the answer, mark_used, the
session's extraction, consolidation at exit), and offline in-process (recalls, says it cannot answer)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hippocampus import Memory

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "chat_agent.py"


def _example():
    spec = importlib.util.spec_from_file_location("chat_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nothing(schema: dict) -> dict:
    """A reply that says nothing, for a processor the scenario does not script: each required field empty."""
    empty = {"boolean": False, "string": "", "array": [], "integer": 0, "number": 0, "object": {}}
    props = schema.get("properties", {})
    return {name: empty.get(props.get(name, {}).get("type"), "") for name in schema.get("required", [])}


def _chat(body: dict) -> str:
    """The stub model: a planner that needs the user's allergies once, an extractor that keeps the
    sister's visit, an answerer that uses what was recalled; every other processor says nothing."""
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    name = fmt.get("name")
    if name == "RecallPlan":
        recalled = "peanut" in user.split("Recalled so far:", 1)[-1]
        return json.dumps({"can_answer": recalled, "need": "" if recalled else "the user's food allergies"})
    if name == "SessionExtraction":
        new = [{"text": "The user's sister Ana visits on Friday", "category": "", "importance": "medium"}] if "Ana" in user else []
        return json.dumps({"new": new, "updates": []})
    if name:
        return json.dumps(_nothing(fmt.get("schema") or {}))
    if "peanut" in system:
        return "Since you are allergic to peanuts, a tofu stir-fry without satay sauce."
    return "Noted."


def test_the_example_agent_runs_end_to_end_against_the_stub(tmp_path, embedder):
    from tests.openai_stub import OpenAIStub

    store = str(tmp_path / "agent.db")
    with Memory(milvus_uri=store, embedder=embedder) as memory:
        peanuts = memory.add("I am allergic to peanuts", user_id="alice").ids[0]
        memory.add("Bob likes peanuts", user_id="bob")
    with OpenAIStub(chat=_chat) as stub:
        env = {**os.environ, "HIPPOCAMPUS_HOME": str(tmp_path / "home"), "HIPPOCAMPUS_LLM_RETRY_BASE_DELAY_S": "0",
               "PYTHONPATH": str(ROOT)}
        run = subprocess.run([sys.executable, str(EXAMPLE), "--user", "alice", "--store", store, "--base-url", stub.base_url,
                              "--model", "stub-chat"], input="what should I cook tonight?\nmy sister Ana visits on Friday\n",
                             capture_output=True, text=True, env=env, timeout=180)
        answers = [b for p, b in stub.requests if p.endswith("/chat/completions") and not b.get("response_format")]
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "offline" not in out.split("\n", 1)[1]
    assert out.count("assistant> Since you are allergic to peanuts") == 2
    assert out.count("need: the user's food allergies") == 2 and "used 1]" in out
    assert "1 memories stored" in out and re.search(r"2 turns: 2\.0 recall rounds and 1\.0 searches a turn, 2 memories marked used", out)
    assert len(answers) == 2 and all("allergic to peanuts" in a["messages"][0]["content"] for a in answers)
    assert all("Bob" not in a["messages"][0]["content"] for a in answers)  # another user's memory never reaches the prompt
    with Memory(milvus_uri=store, embedder=embedder) as memory:
        assert memory.get(peanuts, user_id="alice").hit_count == 2
        stored = [r for r in memory.get_all("alice") if r.metadata.get("source_session")]
        assert [r.text for r in stored] == ["The user's sister Ana visits on Friday"]
        assert [r.text for r in memory.get_all("bob")] == ["Bob likes peanuts"]


def test_the_example_agent_offline_recalls_and_says_it_cannot_answer(memory):
    memory.add("I am allergic to peanuts", user_id="alice")
    out = io.StringIO()
    counts = _example().chat(memory, "alice", "c1", ["what am I allergic to?", "/quit", "never read"], out)
    text = out.getvalue()
    assert text.startswith("offline: no model endpoint is configured")
    assert "(offline) What I recall:\n- I am allergic to peanuts" in text
    assert counts == {"turns": 1, "rounds": 1, "searches": 1, "used": 0, "stored": 0}
    assert memory.get_all("alice")[0].hit_count == 0  # nobody answered: nothing is marked used
