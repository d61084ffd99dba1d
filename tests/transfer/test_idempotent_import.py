"""Idempotent import (issue 31, item 4): importing the same JSONL export or MEMORY.md twice changes
nothing; what is already present (same id, or same source hash) is reported unchanged; an edited
entry still updates. Real milvus-lite and the offline embedder; the CLI through typer's CliRunner."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app
from hippocampus.models import HistoryAction
from hippocampus.transfer.jsonl import HASH_KEY, record_hash

U = "u"


def _other(shared_db: Path, embedder) -> Memory:
    return Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder)


def _seen(memory: Memory, user: str) -> list[tuple]:
    return sorted((r.id, r.text, r.memory_type.value, r.ts, r.chat_id, r.who) for r in memory.get_all(user))


def test_jsonl_imported_twice_into_the_same_store_changes_nothing(memory: Memory, tmp_path: Path):
    mid = memory.add("We hiked the Alps", user_id=U, chat_id="trip", metadata={"mood": "happy"}).ids[0]
    path = tmp_path / "u.jsonl"
    memory.export_jsonl(U, path)
    line = json.loads(path.read_text(encoding="utf-8"))
    assert line[HASH_KEY] == record_hash(memory.get(mid, U))
    before = _seen(memory, U)
    for _ in range(2):  # today: 1 memory became 3
        report = memory.import_jsonl(U, path)
        assert (report.created, report.updated, report.unchanged) == ([], [], [mid])
    assert _seen(memory, U) == before
    assert [e.action for e in memory.history(mid, U)] == [HistoryAction.CREATED]


def test_jsonl_into_another_store_twice_stores_once_and_keeps_the_ids(memory: Memory, shared_db: Path, embedder, tmp_path: Path):
    memory.add("We hiked the Alps", user_id=U, chat_id="trip")
    memory.add("Alice is a nurse", user_id=U, memory_type="semantic")
    memory.add("Alice is a nurse", user_id=U, memory_type="semantic", chat_id="other")  # same text, another chat: two
    path = tmp_path / "u.jsonl"
    assert memory.export_jsonl(U, path) == 3
    other = _other(shared_db, embedder)
    try:
        first = other.import_jsonl("w", path)
        assert len(first.created) == 3 and first.unchanged == []
        seen = _seen(other, "w")
        second = other.import_jsonl("w", path)
        assert (second.created, second.updated, sorted(second.unchanged)) == ([], [], sorted(first.created))
        assert _seen(other, "w") == seen and other.stats("w")["total"] == 3

        old = tmp_path / "old.jsonl"  # an export written before the hash existed: computed on the fly
        old.write_text("".join(json.dumps({k: v for k, v in json.loads(raw).items() if k != HASH_KEY}) + "\n"
                               for raw in path.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
        assert sorted(other.import_jsonl("w", old).unchanged) == sorted(first.created)
        assert other.stats("w")["total"] == 3

        twice = tmp_path / "twice.jsonl"  # one entry twice in a file: stored once
        first_line = path.read_text(encoding="utf-8").splitlines()[0]
        twice.write_text(f"{first_line}\n{first_line}\n", encoding="utf-8")
        report = other.import_jsonl("z", twice)
        assert len(report.created) == 1 and report.unchanged == report.created
    finally:
        other.close()


def test_an_edited_jsonl_entry_updates_its_memory(memory: Memory, tmp_path: Path):
    mid = memory.add("I like green tea", user_id=U, memory_type="semantic").ids[0]
    path = tmp_path / "u.jsonl"
    memory.export_jsonl(U, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["text"] = "I like oolong tea"
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    report = memory.import_jsonl(U, path)
    assert (report.updated, report.created, report.unchanged) == ([mid], [], [])
    assert memory.get(mid, U).text == "I like oolong tea"
    last = memory.history(mid, U)[-1]
    assert (last.action, last.actor, last.old_text) == (HistoryAction.UPDATED, "import", "I like green tea")
    assert memory.import_jsonl(U, path).unchanged == [mid]  # and again: nothing more


def test_memory_md_with_a_new_entry_imported_twice_stores_it_once(memory: Memory):
    tea = memory.add("I like green tea", user_id=U, memory_type="semantic").ids[0]
    text = memory.export_md(U) + "\n### [new] todo | 0.7 | 2026-01-01 | 0\nBook the dentist\n"
    first = memory.import_md(U, text)
    assert len(first.created) == 1 and first.unchanged == [tea]
    second = memory.import_md(U, text)
    assert (second.created, second.updated, sorted(second.unchanged)) == ([], [], sorted([tea, *first.created]))
    assert sorted(r.text for r in memory.get_all(U)) == ["Book the dentist", "I like green tea"]

    edited = text.replace("I like green tea", "I like oolong tea")  # an edited entry still updates
    third = memory.import_md(U, edited)
    assert third.updated == [tea] and third.created == []
    assert memory.get(tea, U).text == "I like oolong tea"
    assert memory.stats(U)["total"] == 2


def test_cli_export_and_import_twice(fresh_path: str, tmp_path: Path):
    runner = CliRunner()

    def cli(*args: str) -> Any:
        result = runner.invoke(app, ["--uri", fresh_path, *args, "--json"])
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return json.loads(result.stdout)

    mid = cli("add", "I like green tea", "-u", "alice", "--semantic")["ids"][0]
    out = tmp_path / "alice.jsonl"
    assert cli("export", "-u", "alice", "--format", "jsonl", "--out", str(out))["count"] == 1
    for _ in range(2):
        report = cli("import", str(out), "-u", "alice", "--format", "jsonl")
        assert (report["created"], report["unchanged"]) == ([], [mid])
    md = tmp_path / "MEMORY.md"
    md.write_text("# Agent Memory\n\n## Active Memories\n\n### [new] fact | 0.6 | 2026-01-01 | 0\nAlice is a nurse\n", encoding="utf-8")
    created = cli("import", str(md), "-u", "alice")["created"]
    assert len(created) == 1
    assert cli("import", str(md), "-u", "alice")["unchanged"] == created
    assert sorted(r["text"] for r in cli("list", "-u", "alice")) == ["Alice is a nurse", "I like green tea"]
