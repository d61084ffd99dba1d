"""Issue 42: a row an older import let in with a damaged library key is read without it; its export
now writes it the same way, so the backup imports back whole instead of being refused at that line
("nothing was imported"). Real milvus-lite, the offline embedder."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.store.milvus import MEMORY_FIELDS

DAMAGE = {"updated_at": "soon", "created_at": {"when": 1}, "merge_pending": "yes", "merged_from_ids": ["1"],
          "life": ["fact"]}


@pytest.fixture(scope="module")
def mem(shared_db: Path, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"expd_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


def test_an_export_of_damaged_rows_imports_back(mem: Memory, tmp_path: Path, caplog) -> None:
    user = f"ed_{uuid.uuid4().hex[:6]}"
    good = mem.add("My sister lives in Porto", user_id=user, infer=False, metadata={"topic": "family"}).ids[0]
    bad = mem.add("I moved to Lisbon in March", user_id=user, infer=False, metadata={"topic": "home"}).ids[0]
    row = mem.store.query(f"id == {bad}", fields=[*MEMORY_FIELDS, "vector"], limit=1)[0]
    mem.store.upsert([{**row, "metadata": {**row["metadata"], **DAMAGE}}])  # as an older import stored it
    path = tmp_path / "backup.jsonl"
    with caplog.at_level(logging.WARNING):
        assert mem.export_jsonl(user, path) == 2
    lines = {json.loads(line)["id"]: json.loads(line) for line in path.read_text().splitlines()}
    assert not set(DAMAGE) & set(lines[bad]["metadata"]) and lines[bad]["metadata"]["topic"] == "home"

    report = mem.import_jsonl(f"{user}_copy", path)  # before: InvalidInput "line 2: ... nothing was imported"
    assert len(report.created) == 2
    copied = {r.text: r for r in mem.get_all(f"{user}_copy")}
    assert set(copied) == {"My sister lives in Porto", "I moved to Lisbon in March"}
    assert copied["I moved to Lisbon in March"].metadata["topic"] == "home"
    assert copied["My sister lives in Porto"].metadata["topic"] == "family"
    assert mem.import_jsonl(f"{user}_copy", path).created == [], "a second import finds what the first stored"
    assert mem.get(good, user).metadata["topic"] == "family"
    assert f"memory {bad}: damaged" in caplog.text and "soon" not in caplog.text  # logged by id, never the value
