"""MEMORY.md and JSONL, export and import (issue 14, item 9): seed 004's section 7.1 (MemoryStore)
rows, each test named after its row, properties of the pure formats, then a few store round trips."""

from __future__ import annotations

import json
import re
import uuid
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app
from hippocampus.errors import InvalidInput
from hippocampus.models import Category, HistoryAction, HistoryEvent, MemoryRecord, MemoryType, State
from hippocampus.transfer.jsonl import dump_line, load_line, record_hash
from hippocampus.transfer.memory_md import SKIPPED, MdEntry, load, parse, render, save

NOW = 1_771_583_400  # 2026-02-20T10:30:00Z

NORMAL = """# Agent Memory

<!-- Last updated: 2026-02-20T10:30:00 -->
<!-- Total entries: 3 -->

## Active Memories

### [101] preference | 0.92 | 2026-02-20 | 12
<!-- type: semantic -->
用户喜欢简洁的代码风格，不喜欢过多注释

### [102] fact | 0.88 | 2026-02-19 | 8
The user's main language is Python
and they use FastAPI

## Archived Memories

### [103] experience | 0.18 | 2026-01-10 | 2
<!-- type: episodic -->
用户曾尝试用 Vue 写前端，但后来放弃了
"""


def _plain(entries: list[MdEntry]) -> list[dict]:
    return [e.model_dump(exclude={"line"}) for e in entries]


def _rendered_order(entries: list[MdEntry]) -> list[MdEntry]:
    return sorted(entries, key=lambda e: (e.section != "active", -e.score))


# ---------------------------------------------------------------------- 7.1 MemoryStore, pure
def test_7_1_parse_normal_memory_md_extracts_every_field():
    entries, warnings = parse(NORMAL)
    assert warnings == []
    assert _plain(entries) == [
        dict(id=101, category=Category.PREFERENCE, score=0.92, last_activated=date(2026, 2, 20), hits=12,
             text="用户喜欢简洁的代码风格，不喜欢过多注释", section="active", memory_type=MemoryType.SEMANTIC),
        dict(id=102, category=Category.FACT, score=0.88, last_activated=date(2026, 2, 19), hits=8,
             text="The user's main language is Python\nand they use FastAPI", section="active", memory_type=None),
        dict(id=103, category=Category.EXPERIENCE, score=0.18, last_activated=date(2026, 1, 10), hits=2,
             text="用户曾尝试用 Vue 写前端，但后来放弃了", section="archived", memory_type=MemoryType.EPISODIC),
    ]
    assert [e.line for e in entries] == [8, 12, 18]


def test_7_1_seed_004_example_parses_and_its_short_ids_read_as_new():
    seed = NORMAL.replace("[101]", "[a1b2c3]").replace("[102]", "[]").replace("[103]", "[new]")
    entries, warnings = parse(seed)
    assert [e.id for e in entries] == [None, None, None]
    assert warnings == ["line 8: id 'a1b2c3' is not a hippocampus id; read as a new entry"]


def test_a_file_an_editor_saved_with_crlf_reads_the_same():
    crlf, warnings = parse(NORMAL.replace("\n", "\r\n"))
    assert warnings == [] and _plain(crlf) == _plain(parse(NORMAL)[0])


def test_7_1_empty_file_or_missing_file_gives_an_empty_list_without_error(tmp_path: Path):
    assert parse("") == ([], [])
    assert parse(render([], NOW)) == ([], [])
    assert load(tmp_path / "nope" / "MEMORY.md") == ([], [])


def test_7_1_damaged_entry_is_skipped_with_a_warning_and_the_rest_load():
    damaged = NORMAL.replace("| 0.88 |", "| 1.7 |").replace("### [103] experience", "### [103] feelings")
    entries, warnings = parse(damaged + "\n### broken heading\ntext\n")
    assert [e.id for e in entries] == [101]
    assert len(warnings) == 3 and all(w.endswith(SKIPPED) for w in warnings)
    assert [w.split(":")[0] for w in warnings] == ["line 12", "line 18", "line 22"]


def test_7_1_save_then_parse_round_trips(tmp_path: Path):
    entries, _ = parse(NORMAL)
    path = tmp_path / "MEMORY.md"
    save(path, render(entries, NOW))
    again, warnings = load(path)
    assert warnings == [] and _plain(again) == _plain(entries)
    assert render(again, NOW) == path.read_text(encoding="utf-8")


def test_7_1_backup_before_writing_equals_the_old_version(tmp_path: Path):
    path = tmp_path / "MEMORY.md"
    save(path, "first version\n")
    assert not (tmp_path / "MEMORY.md.bak").exists()
    save(path, NORMAL)
    assert (tmp_path / "MEMORY.md.bak").read_text(encoding="utf-8") == "first version\n"
    assert path.read_text(encoding="utf-8") == NORMAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MEMORY.md", "MEMORY.md.bak"]  # no temporary file left


def test_7_1_sorting_active_by_score_descending_then_archived():
    entries = [MdEntry(id=i, category="fact", score=s, last_activated=date(2026, 1, 1), text=f"m{i}", section=sec)
               for i, s, sec in [(1, 0.5, "active"), (2, 0.19, "archived"), (3, 0.9, "active"), (4, 0.7, "active"), (5, 0.3, "archived")]]
    text = render(entries, NOW)
    assert [e.id for e in parse(text)[0]] == [3, 4, 1, 5, 2]
    assert text.index("## Active Memories") < text.index("[3]") < text.index("## Archived Memories") < text.index("[5]")


def test_text_with_headings_comments_and_backslashes_is_escaped_and_comes_back_exactly():
    text = "### [1] fact | 0.5 | 2026-01-01 | 1\n## Archived Memories\n\\### once\n<!-- type: episodic -->\na | b | c\n# x"
    entry = MdEntry(id=7, category="fact", score=0.5, last_activated=date(2026, 1, 1), text="<!-- type: semantic -->\n" + text)
    rendered = render([entry], NOW)
    assert "\n\\### [1] fact" in rendered and "\n\\\\### once" in rendered and "\n\\<!-- type: semantic -->" in rendered
    assert _plain(parse(rendered)[0]) == _plain([entry])


# ---------------------------------------------------------------------- properties of the pure formats
_LINES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["### [1] fact | 0.5 | 2026-01-01 | 1", "## Archived Memories", "# Agent Memory", "<!-- type: episodic -->",
                     "\\### x", "\\\\", "a | b | c", "<!-- Last updated: x -->", "", "  ", "###", "\r", "\\<!--"]),
)
_TEXTS = st.lists(_LINES, min_size=1, max_size=5).map("\n".join).filter(lambda t: bool(t.strip()))
_ENTRIES = st.builds(
    MdEntry, id=st.none() | st.integers(0, 2**63 - 1), category=st.sampled_from(Category), score=st.floats(0, 1),
    last_activated=st.dates(), hits=st.integers(0, 10**9), text=_TEXTS, section=st.sampled_from(["active", "archived"]),
    memory_type=st.none() | st.sampled_from(MemoryType),
)


@given(st.lists(_ENTRIES, max_size=6), st.integers(0, 253_402_300_799))
def test_property_memory_md_render_then_parse_keeps_every_field(entries: list[MdEntry], now: int):
    parsed, warnings = parse(render(entries, now))
    assert warnings == []
    assert _plain(parsed) == _plain(_rendered_order(entries))


def _garbles(entry: MdEntry) -> list[str]:
    """Headings of this entry that no parser may accept, each still a `###` line."""
    shown = "new" if entry.id is None else str(entry.id)
    fields = [entry.category.value, f"{entry.score:.2f}", entry.last_activated.isoformat(), str(entry.hits)]

    def with_field(i: int, value: str) -> str:
        return f"### [{shown}] " + " | ".join(value if j == i else f for j, f in enumerate(fields))

    return [f"### [{shown} " + " | ".join(fields), f"### [{shown}] " + " | ".join(fields[:3]), with_field(0, "nonsense"),
            with_field(1, "1.7"), with_field(1, "high"), with_field(2, "2026-13-40"), with_field(3, "-1")]


@given(st.lists(_ENTRIES, min_size=1, max_size=6), st.data())
def test_property_damaged_memory_md_never_loses_the_entries_that_still_parse(entries: list[MdEntry], data: st.DataObject):
    lines = render(entries, NOW).split("\n")
    ordered = _rendered_order(entries)
    heads = [i for i, line in enumerate(lines) if line.startswith("### ")]
    assert len(heads) == len(ordered)
    fate = data.draw(st.lists(st.sampled_from(["keep", "garble", "delete"]), min_size=len(heads), max_size=len(heads)))
    drop_preamble = data.draw(st.sets(st.integers(0, 4)))
    out: list[tuple[str, str]] = []  # (line, tag)
    k = -1
    for i, line in enumerate(lines):
        if i in heads:
            k = heads.index(i)
        elif line.startswith("#"):
            k = -1  # a section line ends the block
        if k < 0 or fate[k] == "keep":
            if not (i < 5 and i in drop_preamble):
                out.append((line, ""))
        elif fate[k] == "garble":
            out.append((data.draw(st.sampled_from(_garbles(ordered[k]))), "garbled") if i in heads else (line, ""))
    parsed, warnings = parse("\n".join(line for line, _ in out))
    assert _plain(parsed) == _plain([e for e, f in zip(ordered, fate) if f == "keep"])
    garbled_at = [n for n, (_, tag) in enumerate(out, 1) if tag == "garbled"]
    skipped = [w for w in warnings if w.endswith(SKIPPED)]
    assert [int(re.match(r"line (\d+):", w)[1]) for w in skipped] == garbled_at


@given(st.lists(_LINES, max_size=12).map("\n".join))
def test_property_parse_never_raises_and_every_warning_names_a_line(text: str):
    entries, warnings = parse(text)
    count = len(text.split("\n"))
    for w in warnings:
        m = re.match(r"line (\d+): ", w)
        assert m and 1 <= int(m[1]) <= count
    assert all(1 <= e.line <= count for e in entries)


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=10), lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
                     max_leaves=8)
_RECORDS = st.builds(
    MemoryRecord, id=st.integers(0, 2**63 - 1), user_id=st.text(min_size=1, max_size=8), memory_type=st.sampled_from(MemoryType),
    ts=st.integers(0, 2**40), chat_id=st.text(max_size=8), who=st.text(max_size=8), text=st.text(max_size=40),
    hit_count=st.integers(0, 1000), metadata=st.dictionaries(st.text(max_size=6), _JSON, max_size=4),
    created_at=st.none() | st.integers(0, 2**40), updated_at=st.none() | st.integers(0, 2**40),
)
_EVENTS = st.lists(st.builds(
    HistoryEvent, memory_id=st.integers(0, 2**63 - 1), user_id=st.text(max_size=8), action=st.sampled_from(HistoryAction),
    old_text=st.none() | st.text(max_size=20), new_text=st.none() | st.text(max_size=20), actor=st.text(max_size=8),
    at=st.integers(0, 2**40), details=st.dictionaries(st.text(max_size=6), _JSON, max_size=3)), max_size=4)


@given(_RECORDS, _EVENTS, st.integers(1, 10**6))
def test_property_jsonl_dump_then_load_round_trips(record: MemoryRecord, events: list[HistoryEvent], lineno: int):
    line = dump_line(record, events)
    assert "\n" not in line
    assert load_line(line, lineno) == (record.model_dump(mode="json"), events)


@pytest.mark.parametrize("line", ["{not json", "[1, 2]", '{"id": 1}', '{"id": 1, "user_id": "u", "history": 3}'])
def test_jsonl_bad_line_is_a_value_error_naming_the_line(line: str):
    with pytest.raises(ValueError, match=r"^line 42: "):
        load_line(line, 42)


# ---------------------------------------------------------------------- through the store
def _heading_of(text: str, memory_id: int) -> str:
    return next(line for line in text.split("\n") if line.startswith(f"### [{memory_id}]"))


def test_7_1_active_archived_split_by_state_sorted_by_score_and_bak_on_export(memory: Memory, tmp_path: Path):
    ids = [memory.add(t, user_id="u").ids[0] for t in ("We went to the lake", "I like jazz", "I moved to Lisbon", "Ana called")]
    for mid, score in zip(ids, (0.5, 0.9, 0.7, 0.1)):
        memory.curate(mid, "u", importance=score)
    assert memory.decay("u").archived == 1
    path = tmp_path / "MEMORY.md"
    path.write_text("the old version\n", encoding="utf-8")
    first = memory.export_md("u", path)
    assert (tmp_path / "MEMORY.md.bak").read_text(encoding="utf-8") == "the old version\n"
    entries, warnings = load(path)
    assert warnings == [] and path.read_text(encoding="utf-8") == first
    assert [(e.id, e.score, e.section) for e in entries] == [
        (ids[1], 0.9, "active"), (ids[2], 0.7, "active"), (ids[0], 0.5, "active"), (ids[3], 0.1, "archived")]
    assert {e.memory_type for e in entries} == {MemoryType.EPISODIC}
    memory.export_md("u", path)
    assert (tmp_path / "MEMORY.md.bak").read_text(encoding="utf-8") == first


def test_edited_memory_md_updates_by_id_creates_new_and_never_touches_another_user(memory: Memory):
    tea = memory.add("I like green tea", user_id="u", memory_type="semantic").ids[0]
    alps = memory.add("We hiked the Alps in June", user_id="u").ids[0]
    nurse = memory.add("Alice is a nurse", user_id="u", memory_type="semantic").ids[0]
    secret = memory.add("Bob's secret", user_id="bob").ids[0]
    text = memory.export_md("u")
    assert sorted(memory.import_md("u", text).unchanged) == sorted([tea, alps, nurse])  # an untouched file changes nothing

    edited = text.replace("I like green tea", "I like oolong tea\nbut only in the morning")
    edited = edited.replace(_heading_of(text, alps), f"### [{alps}] decision | 0.95 | 2026-01-01 | 0")
    block = edited.index(_heading_of(text, nurse))
    edited = edited[:block] + edited[edited.index("\n\n", block) + 2:]  # a person deletes an entry
    edited += ("\n### [new] todo | 0.7 | 2026-01-01 | 0\n<!-- type: episodic -->\nBook the dentist\n"
               f"\n### [{secret}] fact | 0.5 | 2026-01-01 | 0\nhijacked\n\n### [] fact | 1.7 | 2026-01-01 | 0\ntoo sure\n")
    report = memory.import_md("u", edited)
    assert sorted(report.updated) == sorted([tea, alps]) and report.unchanged == [] and len(report.created) == 1
    assert report.skipped == 2 and all(re.match(r"line \d+: ", w) for w in report.warnings)
    assert any(f"memory {secret} is not one of this user's memories" in w for w in report.warnings)

    assert memory.get(tea, "u").text == "I like oolong tea\nbut only in the morning"
    last = memory.history(tea, "u")[-1]
    assert (last.action, last.actor, last.old_text) == (HistoryAction.UPDATED, "import", "I like green tea")
    life = memory.get(alps, "u").life
    assert (life.category, life.importance) == (Category.DECISION, 0.95)
    assert memory.get(alps, "u").text == "We hiked the Alps in June"
    assert memory.history(alps, "u")[-1].details["lifecycle"]["category"] == ["experience", "decision"]
    assert memory.get(nurse, "u").text == "Alice is a nurse"  # deleting an entry deletes no memory
    new = memory.get(report.created[0], "u")
    assert (new.text, new.memory_type, new.life.category, new.life.importance) == ("Book the dentist", MemoryType.EPISODIC, Category.TODO, 0.7)
    assert memory.history(new.id, "u")[0].actor == "import"
    assert memory.get(secret, "bob").text == "Bob's secret"
    assert [e.action for e in memory.history(secret, "bob")] == [HistoryAction.CREATED]


def test_import_md_moves_between_sections_and_refuses_bad_input(memory: Memory, tmp_path: Path):
    mid = memory.add("We went to the lake", user_id="u").ids[0]
    text = memory.export_md("u")
    moved = text.replace("## Active Memories", "## Old").replace("## Archived Memories", "## Active Memories").replace("## Old", "## Archived Memories")
    assert memory.import_md("u", moved).updated == [mid]
    assert memory.get(mid, "u").life.state is State.ARCHIVED
    assert memory.import_md("u", tmp_path / "missing.md").warnings[0].endswith("does not exist; nothing imported")
    with pytest.raises(InvalidInput):
        memory.import_md(" ", text)
    with pytest.raises(InvalidInput):
        memory.export_md("u\x00")


def test_jsonl_moves_every_field_and_the_history_to_another_store(memory: Memory, shared_db: Path, embedder, tmp_path: Path):
    trip = memory.add("We hiked the Alps", user_id="u", chat_id="trip", who="ana", metadata={"mood": "happy"}, ts=1_700_000_000).ids[0]
    memory.update(trip, "We hiked the Swiss Alps", user_id="u")
    memory.mark_used([trip], user_id="u")
    memory.curate(trip, "u", category="core")
    memory.add("Alice is a nurse", user_id="u", memory_type="semantic")
    memory.add("not mine", user_id="bob")
    path = tmp_path / "u.jsonl"
    assert memory.export_jsonl("u", path) == 2
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2

    other = Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder)
    try:
        report = other.import_jsonl("w", path)
        assert len(report.created) == 2
        for old, new_id in zip(memory.get_all("u"), report.created):
            new = other.get(new_id, "w")
            assert new.metadata.pop("source_hash") == record_hash(old)  # what a second import finds (issue 31)
            assert new.model_dump(exclude={"id", "user_id"}) == old.model_dump(exclude={"id", "user_id"})
            events = other.history(new_id, "w")
            moved = {"event_id", "memory_id", "user_id"}  # each store numbers its own events
            assert [e.model_dump(exclude=moved) for e in events[:-1]] == [e.model_dump(exclude=moved) for e in memory.history(old.id, "u")]
            assert all(e.event_id is not None for e in events)
            assert (events[-1].actor, events[-1].details["imported_from"]) == ("import", old.id)
        moved = other.get(report.created[0], "w")
        assert (moved.hit_count, moved.life.category, moved.chat_id, moved.who) == (1, Category.CORE, "trip", "ana")
        assert other.search("Swiss Alps", user_id="w").episodic[0].id == moved.id  # embedded again
        assert other.stats()["total"] == 2

        bad = tmp_path / "bad.jsonl"
        bad.write_text(path.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
        with pytest.raises(InvalidInput, match="line 3"):
            other.import_jsonl("z", bad)
        assert other.stats("z")["total"] == 0  # checked whole before anything was written
    finally:
        other.close()


def test_cli_export_edit_import_and_no_service(fresh_path: str, tmp_path: Path):
    runner = CliRunner()

    def cli(*args: str, code: int = 0):
        result = runner.invoke(app, ["--uri", fresh_path, *args])
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
        return result

    mid = json.loads(cli("add", "I like green tea", "-u", "alice", "--semantic", "--json").stdout)["ids"][0]
    text = cli("export", "-u", "alice").stdout
    md = tmp_path / "MEMORY.md"
    md.write_text(text.replace("green tea", "oolong tea"), encoding="utf-8")
    report = json.loads(cli("import", str(md), "-u", "alice", "--json").stdout)
    assert report["updated"] == [mid] and report["created"] == []
    out = tmp_path / "alice.jsonl"
    cli("export", "-u", "alice", "--format", "jsonl", "--out", str(out))
    assert json.loads(out.read_text(encoding="utf-8"))["text"] == "I like oolong tea"
    assert "needs --out" in cli("export", "-u", "alice", "-f", "jsonl", code=2).stderr
    served = runner.invoke(app, ["--server", "http://127.0.0.1:9", "export", "-u", "alice"])  # goes through the service now
    assert served.exit_code == 1 and "cannot reach the Hippocampus service" in served.stderr
