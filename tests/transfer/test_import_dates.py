"""One rule for time on import and per user (issue 31): an imported entry that says "tomorrow" / "明天"
is resolved from when it was said (its said_at / created_at / ts; a MEMORY.md `[new]` entry's heading
date), never from the import time; a user's own zone (`user_timezones`) decides the named day and the
end-of-day expiry, near midnight where that zone and UTC disagree. Real milvus-lite, offline rules."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.config import MemoryConfig
from hippocampus.models import Category

SHANGHAI = "Asia/Shanghai"


def _ts(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=timezone.utc).timestamp())


@pytest.fixture(scope="module")
def mem(shared_db: Path, embedder):
    """Times read in UTC, except user bo's, read in Shanghai (UTC+8)."""
    m = Memory(milvus_uri=str(shared_db), collection_name=f"tz_{uuid.uuid4().hex[:10]}", embedder=embedder,
               timezone="UTC", user_timezones={"bo": SHANGHAI})
    yield m
    m.close()


def _line(text: str, ts: int, **meta) -> str:
    return json.dumps({"id": 7, "user_id": "x", "memory_type": "episodic", "ts": ts, "chat_id": "c", "who": "x",
                       "text": text, "hit_count": 0, "metadata": meta}, ensure_ascii=False)


@pytest.mark.parametrize("text, meta", [("Remind me to book the train tomorrow", {}),
                                        ("提醒我明天给妈妈打电话", {"created_at": _ts("2026-03-10T10:00:00")})])
def test_jsonl_entry_said_months_ago_is_dated_from_then(mem: Memory, tmp_path: Path, text: str, meta: dict) -> None:
    user = f"imp_{uuid.uuid4().hex[:6]}"
    ts = _ts("2026-03-10T10:00:00") if not meta else _ts("2026-03-12T09:00:00")  # created_at wins over ts
    path = tmp_path / "old.jsonl"
    path.write_text(_line(text, ts, **meta) + "\n", encoding="utf-8")
    report = mem.import_jsonl(user, path)
    record = mem.get(report.created[0], user)
    assert record.metadata["named_date"] == "2026-03-11"  # not the day after the import
    assert record.metadata["said_at"].startswith("2026-03-10T10:00:00")
    assert record.life.category is Category.TODO and record.life.expires_at == _ts("2026-03-11T23:59:59")
    assert text not in str(mem.context(user, "what should I do?"))  # its day passed months ago
    assert mem.import_jsonl(user, path).unchanged == report.created  # dating it keeps the import idempotent


def test_memory_md_new_entry_is_dated_from_its_heading(mem: Memory) -> None:
    user = f"md_{uuid.uuid4().hex[:6]}"
    report = mem.import_md(user, "# MEMORY\n\n## Active\n\n### [new] todo | 0.80 | 2026-03-10 | 0\n明天给妈妈打电话\n")
    record = mem.get(report.created[0], user)
    assert record.metadata["named_date"] == "2026-03-11" and record.life.expires_at == _ts("2026-03-11T23:59:59")


@pytest.mark.parametrize("infer", [False, True])
def test_tomorrow_near_midnight_is_read_in_the_users_own_zone(mem: Memory, infer: bool) -> None:
    """17:30 UTC on 26 Nov is 01:30 on 27 Nov in Shanghai: bo's "tomorrow" is the 28th and ends at
    midnight Shanghai time; al (the UTC default) gets the 27th, ending at midnight UTC."""
    said = _ts("2026-11-26T17:30:00")
    text = "Remind me to book the train tomorrow"
    got = {}
    for user in ("bo", "al"):
        user_id = f"{user}" if user == "bo" else f"al_{uuid.uuid4().hex[:4]}"
        mem.reset(user_id)
        ids = mem.add([{"role": "user", "content": text}] if infer else text, user_id=user_id, ts=said, infer=infer).ids
        record = mem.get(ids[0], user_id)
        got[user] = (record.metadata["named_date"], record.life.expires_at)
    assert got["bo"] == ("2026-11-28", _ts("2026-11-28T15:59:59"))
    assert got["al"] == ("2026-11-27", _ts("2026-11-27T23:59:59"))


def test_an_unknown_zone_for_a_user_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        MemoryConfig(user_timezones={"bo": "Mars/Olympus"})
