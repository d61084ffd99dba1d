"""The one filter builder (hippocampus/store/filters.py): what it renders, what it refuses, and that
what it renders selects exactly the intended rows in real milvus-lite."""

from __future__ import annotations

import json

import pytest

from hippocampus import InvalidInput, Memory
from hippocampus.store import filters as F

EVIL = [
    'x" or user_id != "',
    "x' or user_id != '",
    'a\\" || true || "',
    "back\\slash\\",
    "\\",
    '"',
    "or",
    "user_id",
    "in [1, 2]",
    "tab\there",
    "new\nline",
    "cr\rreturn",
    "中文用户",
    "emoji 🙂👨‍👩‍👧",
    " leading and trailing ",
    "% _ * ? like",
]


@pytest.mark.parametrize("value", EVIL)
def test_string_literals_stay_one_literal(value: str):
    rendered = F.literal(value)
    assert rendered.startswith('"') and rendered.endswith('"')
    assert json.loads(rendered) == value  # a JSON string literal that decodes back to the value itself
    inner = rendered[1:-1]
    assert '"' not in inner.replace('\\"', "")  # every quote inside is escaped
    assert "\n" not in rendered and "\t" not in rendered and "\r" not in rendered


@pytest.mark.parametrize("value", ["nul\x00", "bell\x07", "esc\x1b[0m", "vt\x0b", "ff\x0c"])
def test_control_characters_milvus_cannot_express_are_refused(value: str):
    with pytest.raises(InvalidInput, match="control character"):
        F.literal(value)


def test_numbers_booleans_and_other_types():
    assert F.literal(True) == "true" and F.literal(False) == "false"
    assert F.literal(42) == "42" and F.literal(-7) == "-7"
    assert F.literal(1.5) == "1.5"
    for bad in (float("nan"), float("inf")):
        with pytest.raises(InvalidInput):
            F.literal(bad)
    for bad in (None, b"bytes", [1], {"a": 1}, object()):
        with pytest.raises(InvalidInput):
            F.literal(bad)


@pytest.mark.parametrize("name", ["user_id or 1", "a b", "", "1abc", 'x"', "metadata[0]", "x" * 65, None])
def test_field_and_json_key_names_must_be_identifiers(name):
    with pytest.raises(InvalidInput):
        F.eq(name, "v")
    with pytest.raises(InvalidInput):
        F.json_eq("metadata", name, "v")


def test_operators_lists_and_conjunctions():
    assert F.eq("user_id", "alice") == 'user_id == "alice"'
    assert F.cmp("ts", ">=", 5) == "ts >= 5"
    with pytest.raises(InvalidInput):
        F.cmp("ts", "; drop", 5)
    assert F.in_("id", [1, 2, 3]) == "id in [1, 2, 3]"
    assert F.in_("id", []) == "false"
    assert F.and_("a == 1", None, "", "b == 2") == "(a == 1) and (b == 2)"
    assert F.and_("a == 1") == "a == 1" and F.and_() == ""
    assert F.or_("a == 1", None, "b == 2") == "(a == 1) or (b == 2)"
    assert F.or_("a == 1") == "a == 1" and F.or_() == ""
    # an or inside an and stays bracketed: the user scope cannot be escaped through it
    assert F.and_(F.eq("user_id", "u"), F.or_("a == 1", "b == 2")) == '(user_id == "u") and ((a == 1) or (b == 2))'
    assert F.json_eq("metadata", "project", "x") == 'metadata["project"] == "x"'


def test_rendered_filters_select_exactly_the_intended_rows(memory: Memory):
    has_control = lambda v: any(c in v for c in "\t\n\r")  # noqa: E731 - refused as ids, fine as text
    text_ids = {v: memory.add(v, user_id="texts").ids[0] for v in EVIL if v.strip()}
    user_ids = {v: memory.add(f"memory of {v!r}", user_id=v).ids[0] for v in EVIL if v.strip() and not has_control(v)}
    victim = memory.add("the victim's memory", user_id="victim").ids[0]
    store = memory.store
    for value, mid in text_ids.items():
        assert [r["id"] for r in store.query(F.eq("text", value), limit=100)] == [mid], value
    for value, mid in user_ids.items():
        assert [r["id"] for r in store.query(F.eq("user_id", value), limit=100)] == [mid], value
        assert store.count(F.and_(F.eq("user_id", value), F.eq("memory_type", "episodic"))) == 1
    assert store.count(F.eq("user_id", "victim")) == 1
    assert [r["id"] for r in store.query(F.in_("id", [victim]), limit=10)] == [victim]
    assert store.count(F.in_("user_id", list(user_ids))) == len(user_ids)


def test_metadata_filters_are_escaped_too(memory: Memory):
    memory.add("tagged infra", user_id="u", metadata={"project": "infra"})
    memory.add("tagged evil", user_id="u", metadata={"project": 'x" or 1 == 1 or "'})
    memory.add("other user's infra", user_id="other", metadata={"project": "infra"})
    hits = memory.search("tagged", user_id="u", filters={"project": "infra"}).episodic
    assert [h.text for h in hits] == ["tagged infra"]
    hits = memory.search("tagged", user_id="u", filters={"project": 'x" or 1 == 1 or "'}).episodic
    assert [h.text for h in hits] == ["tagged evil"]
    assert len(memory.search("tagged", user_id="u", filters={"project": "nothing"})) == 0
    with pytest.raises(InvalidInput):
        memory.search("tagged", user_id="u", filters={'project"] or true or metadata["a': "x"})
