"""scripts/eval_chathook.py on a tiny LoCoMo-shaped file: each turn through add(infer=True), the raw path
beside it, turns stored and evidence kept counted, and hits mapped back to turns through `turn_id` and the
`source_turns` a consolidated memory carries."""

from __future__ import annotations

import json

from scripts.eval_chathook import main, turn_keys
from tests.scripts.test_eval_locomo_script import SAMPLE


def test_turn_keys_read_own_and_carried_turns():
    assert turn_keys({"turn_id": "D1:2", "source_turns": ["D1:2", "D3:4"]}) == ["D1:2", "D3:4"]
    assert turn_keys({"source_turns": ["D2:1"]}) == ["D2:1"] and turn_keys({}) == []


def test_the_script_reports_both_paths(tmp_path, capsys):
    data, out = tmp_path / "locomo.json", tmp_path / "out.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["--data", str(data), "--json", str(out), "--consolidate"]) == 0
    report = json.loads(out.read_text())
    assert report["raw"]["turns_stored"] == 1.0 and report["raw"]["evidence_kept"] == 1.0
    hook = report["chat-hook"]
    assert hook["questions"] == 3 and hook["turns"] == 5
    # "Did you go anywhere last weekend?" is a question: the only turn the rules drop; every evidence turn is kept
    assert hook["turns_stored"] == 0.8 and hook["evidence_kept"] == 1.0 and hook["hit@5"] == 1.0
    printed = capsys.readouterr().out
    assert "chat-hook" in printed and "evidence kept" in printed


def test_local_reads_the_server_local_llm_recorded(tmp_path, monkeypatch):
    """`--local` points the library at the server `scripts/local_llm.py serve` recorded (it named a provider
    the config does not have before), and says what to do when none is recorded."""
    import pytest

    from scripts import local_llm
    from scripts.eval_chathook import local_settings

    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))

    def error(message: str) -> None:
        raise SystemExit(message)

    with pytest.raises(SystemExit, match="local_llm.py serve"):
        local_settings(error)
    local_llm.write_state({"url": "http://127.0.0.1:8081/v1", "model": "qwen2.5-coder-1.5b", "threads": 2, "pid": 1})
    settings = local_settings(error)
    assert settings["llm_provider"] == "openai" and settings["llm_base_url"] == "http://127.0.0.1:8081/v1"
    from hippocampus.config import MemoryConfig

    assert MemoryConfig(**settings).llm_model == "qwen2.5-coder-1.5b"


def test_sessions_keep_a_slice_and_the_questions_it_answers_in_full(tmp_path):
    """`--sessions 1` keeps the first session's turns and only the questions whose evidence is all in it."""
    from scripts.eval_chathook import first_sessions

    turns = [{"chat_id": c, "n": i} for i, c in enumerate(["session_1", "session_1", "session_2", "session_3"])]
    assert [t["n"] for t in first_sessions(turns, 1)] == [0, 1] and len(first_sessions(turns, 2)) == 3
    data, out = tmp_path / "locomo.json", tmp_path / "out.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["--data", str(data), "--json", str(out), "--sessions", "1", "--no-raw"]) == 0
    hook = json.loads(out.read_text())["chat-hook"]
    assert hook["turns"] == 3 and hook["questions"] == 1  # "the name of Ana's kitten" needs session 2 too
