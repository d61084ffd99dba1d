"""One row builder (MemoryRecord.to_row) and one write path (store/writes.Writer).

The encoder round-trips every field of a record; every column the model has is a column of the
schema; and every path that writes a memory row (add, add_many, update, mark_used, consolidation's
pending decision, distillation, merge and separation, decay, restore, undo, import) writes it through
to_row: with to_row marking its rows, a row written by hand (a writer bypassing the encoder) is found
unmarked right after the step that wrote it, on a real milvus-lite store."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.models import ROW_FIELDS, STAMPS, HistoryAction, MemoryRecord, MemoryType
from hippocampus.store import filters as F
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import merge_union, scripted_chat, vector_pair

T0 = 1_767_225_600
STAMP_MAX = 253_402_300_799
json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=12)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                          max_leaves=8)
ident = st.text(min_size=1, max_size=20)


@st.composite
def records(draw: Any, stamps_in_metadata: bool = True) -> MemoryRecord:
    """Any record as a read gives it: its stamps (when set) inside metadata too, or, with
    `stamps_in_metadata` False, possibly only in the record's own fields."""
    meta = draw(st.dictionaries(st.text(max_size=8).filter(lambda k: k not in STAMPS), json_value, max_size=4))
    stamps = {}
    for key in STAMPS:
        value = draw(st.none() | st.integers(0, STAMP_MAX))
        stamps[key] = value
        if value is not None and (stamps_in_metadata or draw(st.booleans())):
            meta[key] = value
    return MemoryRecord(id=draw(st.integers(1, 2**63 - 1)), user_id=draw(ident), memory_type=draw(st.sampled_from(list(MemoryType))),
                        ts=draw(st.integers(0, STAMP_MAX)), chat_id=draw(ident), who=draw(ident), text=draw(st.text(min_size=1)),
                        hit_count=draw(st.integers(0, 2**62)), metadata=meta, **stamps)


@given(records())
def test_every_field_round_trips(record):
    row = record.to_row()
    assert set(row) == set(ROW_FIELDS)
    assert MemoryRecord.from_row(json.loads(json.dumps(row))) == record  # as the store gives it back: JSON


@given(records(stamps_in_metadata=False), st.lists(st.floats(-1, 1), min_size=2, max_size=4))
def test_stamps_and_vector_survive_and_an_insert_has_no_id(record, vector):
    row = record.to_row(vector, with_id=False)
    assert "id" not in row and row["vector"] == vector
    back = MemoryRecord.from_row({**row, "id": record.id})
    assert (back.created_at, back.updated_at) == (record.created_at, record.updated_at)
    assert back.to_row() == record.to_row()


def test_every_field_of_the_model_is_a_column_of_the_schema(shared_db, embedder):
    """A field added to MemoryRecord without its column (ROW_FIELDS, store/schema.py) fails here."""
    assert set(MemoryRecord.model_fields) == set(ROW_FIELDS) | set(STAMPS)
    m = Memory(milvus_uri=str(shared_db), collection_name=f"rb_{uuid.uuid4().hex[:10]}", embedder=embedder)
    try:
        columns = {f["name"] for f in m.store.client.describe_collection(m.store.collection)["fields"]}
        assert set(ROW_FIELDS) <= columns
    finally:
        m.close()


# ------------------------------------------------------------------ every writer through to_row
PROBE = "_encoded_in"
STEP = ["setup"]


@pytest.fixture
def marked(monkeypatch) -> None:
    """to_row marks what it encodes with the step under way (in metadata, which every writer keeps): a row
    that a step changed without encoding it (a writer bypassing to_row) keeps an earlier step's mark, or none."""
    encode = MemoryRecord.to_row

    def to_row(self: MemoryRecord, *args: Any, **kwargs: Any) -> dict[str, Any]:
        row = encode(self, *args, **kwargs)
        return {**row, "metadata": {**row["metadata"], PROBE: STEP[0]}}

    monkeypatch.setattr(MemoryRecord, "to_row", to_row)


def _extract(inputs: dict[str, Any]) -> str:
    """A scripted SemanticWriter: each episode's text as its one fact."""
    episode = inputs.get("episode")
    text = episode.get("text") if isinstance(episode, dict) else None
    return json.dumps({"facts": [{"fact": text}] if text else []})


@pytest.fixture
def mem(shared_db, marked) -> Iterator[Memory]:
    chat = scripted_chat({"MergeResult": merge_union, "SemanticExtraction": _extract})
    m = Memory(milvus_uri=str(shared_db), collection_name=f"rb_{uuid.uuid4().hex[:10]}", embedder=DeterministicEmbedder(8, lexical=False),
               llm=chat, t_merge_high=0.85, t_amb_low=0.65)
    yield m
    m.close()


def _rows(mem: Memory) -> dict[int, dict[str, Any]]:
    return {int(r["id"]): r for r in mem.store.query("id >= 0", list(ROW_FIELDS), limit=16384)}


def _content(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "metadata": {k: v for k, v in (row["metadata"] or {}).items() if k != PROBE}}


def _step(mem: Memory, name: str, action: Callable[[], Any]) -> Any:
    """Run one writing step; every row it wrote or changed was encoded by to_row during it, and decodes
    to a record whose every column survived."""
    before = _rows(mem)
    STEP[0] = name
    result = action()
    after = _rows(mem)
    changed = [i for i, r in after.items() if i not in before or _content(r) != _content(before[i])]
    assert changed, f"{name} wrote nothing: the check would prove nothing"
    bare = [i for i in changed if after[i]["metadata"].get(PROBE) != name]
    assert not bare, f"{name}: rows {bare} were written without MemoryRecord.to_row"
    for row in after.values():
        assert MemoryRecord.from_row(row).to_row() == {**row, "metadata": {**row["metadata"], PROBE: name}}
    return result


def _events(mem: Memory, user: str, action: HistoryAction) -> list[dict[str, Any]]:
    return mem.store.history(F.and_(F.eq("user_id", user), F.eq("action", action.value)))


def test_every_writer_writes_through_to_row(mem, tmp_path):
    user = "alice"
    ids = _step(mem, "add", lambda: [mem.add(f"a remark number {i} about the weather", user, ts=T0 + i, infer=False).ids[0]
                                     for i in range(2)])
    _step(mem, "add_many", lambda: mem.add_many([{"text": "bulk one", "user_id": user, "ts": T0},
                                                 {"text": "Alice's favourite colour is green", "user_id": user, "ts": T0,
                                                  "memory_type": "semantic"}]))
    _step(mem, "update", lambda: mem.update(ids[0], "a remark about the rain", user_id=user))
    updated = next(e["event_id"] for e in _events(mem, user, HistoryAction.UPDATED) if e["memory_id"] == ids[0])
    _step(mem, "undo an update", lambda: mem.undo(updated, user))
    _step(mem, "mark_used", lambda: mem.mark_used(ids[1], user))
    assert mem.get(ids[1], user).hit_count == 1

    # consolidation: a pending turn decided, episodes distilled, a pair merged, a pair separated
    near_a, near_b = vector_pair(0.95, seed=3)
    amb_a, amb_b = vector_pair(0.75, seed=4)
    base = [MemoryRecord(id=0, user_id=user, memory_type=MemoryType.EPISODIC, ts=T0 + 100 + i, chat_id="c1", who=user, text=t,
                         hit_count=2, metadata={"thing": t, "time": "2026-01-01T00:00:00+00:00", "chatid": "c1", "who": user,
                                                "created_at": T0, "updated_at": T0})
            for i, t in enumerate(("first telling", "second telling", "a trip to Rome", "a trip to Oslo"))]
    pending = base[0].model_copy(update={"text": "a turn kept raw", "metadata": {**base[0].metadata, "pending_decision": True}})
    mem.store.insert([r.to_row(v, with_id=False) for r, v in zip([*base, pending], (near_a, near_b, amb_a, amb_b, [1.0] + [0.0] * 7))])
    stats = _step(mem, "consolidate", lambda: mem.consolidate(user))
    assert stats.merged >= 1 and stats.separated >= 1 and stats.semantic_created >= 1 and stats.pending_decided == 1
    merged = [r for r in _rows(mem).values() if (r["metadata"] or {}).get("merged_from_ids")]
    assert merged and merged[0]["hit_count"] == 4  # both sources' hits kept by the merged row

    # decay far later: a row written before lifecycle stamped, the rest forgotten; restore and undo bring rows back
    mem.store.insert([base[0].model_copy(update={"text": "written before lifecycle"}).to_row([0.0, 1.0] + [0.0] * 6, with_id=False)])
    _step(mem, "decay", lambda: mem.decay(user, now=T0 + 3 * 365 * 86400))
    forgotten = _events(mem, user, HistoryAction.FORGOTTEN)
    back = _step(mem, "restore", lambda: mem.restore(forgotten[0]["memory_id"], user))
    assert back.hit_count == forgotten[0]["details"]["row"]["hit_count"]
    mem.delete(back.id, user)
    deleted = next(e["event_id"] for e in _events(mem, user, HistoryAction.DELETED) if e["memory_id"] == back.id)
    _step(mem, "undo a delete", lambda: mem.undo(deleted, user))

    path = tmp_path / "backup.jsonl"
    exported = mem.export_jsonl(user, path)
    report = _step(mem, "import_jsonl", lambda: mem.import_jsonl("bob", path))
    assert exported > 0 and len(report.created) == exported
