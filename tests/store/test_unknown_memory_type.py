"""Issue 42: a stored row whose `memory_type` this version does not know (written by a newer version,
or damaged) never breaks a read of its user: list, page, search, context, stats, export and the
store-wide jobs go on without it; it is logged once by id and counted (`/v1/stats` "damaged"), and
left as it is (never rewritten as another kind). Real milvus-lite, the offline embedder."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.models import damaged_rows
from hippocampus.store.milvus import MEMORY_FIELDS


@pytest.fixture(scope="module")
def mem(shared_db: Path, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"kind_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


def _plant(mem: Memory, user: str, text: str, kind: str) -> int:
    """A row as a newer version (or a damaged file) left it: the same columns, a kind this one lacks."""
    template = mem.add(text, user_id=user, infer=False).ids[0]
    row = mem.store.query(f"id == {template}", fields=[*MEMORY_FIELDS, "vector"], limit=1)[0]
    mem.store.delete(f"id == {template}")
    row.pop("id")
    return mem.store.insert([{**row, "memory_type": kind}])[0]


def test_an_unknown_memory_type_is_skipped_by_every_read(mem: Memory, tmp_path: Path, caplog) -> None:
    user = f"k_{uuid.uuid4().hex[:6]}"
    good = mem.add("My sister lives in Porto", user_id=user, infer=False).ids[0]
    before = damaged_rows(user)
    with caplog.at_level(logging.WARNING):
        strange = _plant(mem, user, "I moved to Lisbon in March", "reflection")
        assert [r.id for r in mem.get_all(user)] == [good]
        assert [r.id for r in mem.page(user, limit=50).items] == [good]
        assert strange not in {h.id for h in mem.search("Lisbon Porto", user_id=user).all}
        mem.context(user, "where does my sister live?")
        assert mem.export_jsonl(user, tmp_path / "out.jsonl") == 1
        lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert [line["id"] for line in lines] == [good]
        assert "Porto" in mem.export_md(user)
        mem.consolidate(user_id=user)
        mem.consolidate()  # store-wide: every user
        mem.stats(user)
    assert damaged_rows(user) == before + 1  # once, however many reads met it
    assert f"memory {strange} has a damaged memory_type" in caplog.text
    assert "reflection" not in caplog.text  # the id, never the value
    row = mem.store.client.query(mem.store.collection, filter=f"id == {strange}", output_fields=["memory_type", "text"])
    assert row[0]["memory_type"] == "reflection" and row[0]["text"] == "I moved to Lisbon in March", "left as it is"
    mem.reset(user)  # and it can still be erased with its user
    assert mem.store.client.query(mem.store.collection, filter=f"id == {strange}", output_fields=["id"]) == []
