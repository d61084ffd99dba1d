"""Nothing stored can break a read (issue 42, item 1): an imported line's library-owned metadata
(created_at / updated_at, life, agent_id / run_id, merge and pending markers, ...) is checked as the
library writes it, the line refused with its number and reason and nothing written; a row that an
older import let in reads without its damaged stamp (logged once, counted), never an error.
Real milvus-lite, the offline embedder."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.errors import InvalidInput
from hippocampus.models import damaged_rows
from hippocampus.transfer.owned import CHECKS
from hippocampus.validation import OWNED_KEYS


@pytest.fixture(scope="module")
def mem(shared_db: Path, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"own_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


def _line(meta: dict, **fields) -> str:
    row = {"id": 7, "user_id": "x", "memory_type": "episodic", "ts": 1_700_000_000, "chat_id": "c", "who": "x",
           "text": "I moved to Lisbon in March", "hit_count": 0, "metadata": meta, **fields}
    return json.dumps(row)


BAD = [
    ({"updated_at": "soon"}, "updated_at"),
    ({"created_at": "yesterday"}, "created_at"),
    ({"created_at": 2**62}, "created_at"),
    ({"created_at": True}, "created_at"),
    ({"life": {"category": "fact", "last_activated": "x"}}, "life"),
    ({"life": {"category": "fact", "last_activated": 2**62}}, "last_activated"),
    ({"life": ["fact"]}, "life"),
    ({"agent_id": {"a": 1}}, "agent_id"),
    ({"run_id": 5}, "run_id"),
    ({"merge_pending": "yes"}, "merge_pending"),
    ({"pending_decision": 1}, "pending_decision"),
    ({"merged_from_ids": ["1"]}, "merged_from_ids"),
    ({"separated_from": 3}, "separated_from"),
    ({"turns": [{"role": "user"}]}, "turns"),
    ({"expires_at": "never"}, "expires_at"),
    ({"compression": "zip"}, "compression"),
    ({"said_at": "not a date"}, "said_at"),
]


@pytest.mark.parametrize("meta, key", BAD, ids=[k for _, k in BAD])
def test_an_import_refuses_a_damaged_library_key_by_line_and_writes_nothing(mem: Memory, tmp_path: Path, meta: dict,
                                                                             key: str) -> None:
    user = f"imp_{uuid.uuid4().hex[:6]}"
    path = tmp_path / "b.jsonl"
    path.write_text(_line({}) + "\n" + _line(meta, id=8) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as err:
        mem.import_jsonl(user, path)
    assert "line 2" in str(err.value) and key in str(err.value) and "nothing was imported" in str(err.value)
    assert mem.get_all(user) == []


def test_a_record_level_stamp_is_checked_too(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text(_line({}, created_at=2**62) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="line 1: .*created_at"):
        mem.import_jsonl("rec_user", path)


def test_every_owned_key_has_an_import_check() -> None:
    assert set(OWNED_KEYS) <= set(CHECKS)


def test_a_backup_of_the_librarys_own_keys_still_imports(mem: Memory, tmp_path: Path) -> None:
    """What the library writes passes: a real export, with its stamps, life and agent, imports back."""
    user = f"rt_{uuid.uuid4().hex[:6]}"
    mem.add("I prefer green tea in the morning", user_id=user, infer=False, agent_id="planner", run_id="r1")
    path = tmp_path / "out.jsonl"
    mem.export_jsonl(user, path)
    report = mem.import_jsonl(f"{user}_b", path)
    assert len(report.created) == 1 and mem.get_all(f"{user}_b")[0].metadata["agent_id"] == "planner"


def test_a_damaged_row_already_stored_reads_without_its_stamp(mem: Memory) -> None:
    """A row an older import let in ("soon" as updated_at, an object as metadata.created_at): every read
    of its user works, the record reads with no stamp, and the row is counted once."""
    user = f"dmg_{uuid.uuid4().hex[:6]}"
    good = mem.add("My sister lives in Porto", user_id=user, infer=False).ids[0]
    bad = mem.add("I moved to Lisbon in March", user_id=user, infer=False).ids[0]
    row = mem.store.query(f"id == {bad}", fields=["id", "user_id", "memory_type", "ts", "chat_id", "who", "text",
                                                 "hit_count", "metadata", "vector"], limit=1)[0]
    row["metadata"] = {**row["metadata"], "updated_at": "soon", "created_at": {"when": 1}}
    mem.store.upsert([row])
    before = damaged_rows(user)
    records = {r.id: r for r in mem.get_all(user)}
    assert set(records) == {good, bad} and records[bad].updated_at is None and records[bad].created_at is None
    assert bad in {h.id for h in mem.search("Lisbon", user_id=user).all}
    assert mem.get(bad, user).text == "I moved to Lisbon in March"
    mem.context(user, "where do I live?")
    mem.update(bad, "I moved to Lisbon in April", user_id=user)
    assert damaged_rows(user) == before + 1  # once, however many reads met it
    mem.delete(bad, user)
    assert [r.id for r in mem.get_all(user)] == [good]
