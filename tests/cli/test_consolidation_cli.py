"""`hippocampus consolidate` and `hippocampus schedule` on a real milvus-lite store (offline rules provider)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hippocampus.cli.app import app

runner = CliRunner(env={"COLUMNS": "200"})


def run(uri: str, *args: str, code: int = 0):
    result = runner.invoke(app, ["--uri", uri, *args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def test_consolidate_merges_a_duplicate_and_reports_stats(fresh_path: str):
    run(fresh_path, "add", "I went to the dentist this afternoon and got a filling", "-u", "alice", "-c", "c1")
    run(fresh_path, "add", "I went to the dentist this afternoon and got a filling. It cost 120 dollars.", "-u", "alice", "-c", "c1")
    table = run(fresh_path, "consolidate").stdout
    assert "merged" in table and "similarity lookups" in table
    listed = json.loads(run(fresh_path, "list", "-u", "alice", "--json").stdout)
    texts = [r["text"] for r in (listed if isinstance(listed, list) else listed["memories"])]
    assert texts == ["I went to the dentist this afternoon and got a filling. It cost 120 dollars."]
    again = json.loads(run(fresh_path, "consolidate", "--user", "alice", "--json").stdout)
    assert again["merged"] == 0 and again["llm_calls"] == 0 and again["examined"] == 1


def test_schedule_rejects_a_bad_cron_expression(fresh_path: str):
    result = run(fresh_path, "schedule", "--cron", "at three", code=2)
    assert "cron" in result.stderr
