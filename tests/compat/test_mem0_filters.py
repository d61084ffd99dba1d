"""mem0's documented filter examples, run unchanged through the drop-in (issue 43: all 18 were refused by the
native API as written): search and get_all answer exactly the memories mem0's default store answers."""

from __future__ import annotations

from typing import Any

import pytest

from .mem0_cases import EXAMPLES, INVALID, text_of

QUERY = "note kept for the filter examples"


def _names(results: list[dict[str, Any]], ids: dict[str, str]) -> set[str]:
    by_id = {v: k for k, v in ids.items()}
    return {by_id[r["id"]] for r in results}


@pytest.mark.parametrize("filters,want", [(f, w) for _, f, w in EXAMPLES], ids=[n for n, _, _ in EXAMPLES])
def test_a_documented_filter_answers_what_mem0_answers(filled, filters: dict[str, Any], want: set[str]):
    m, ids = filled
    found = m.search(QUERY, filters=filters, top_k=50, threshold=0.0)["results"]
    assert _names(found, ids) == want
    assert all(r["memory"] == text_of(_names([r], ids).pop()) for r in found)
    listed = m.get_all(filters=filters, top_k=100)["results"]
    assert _names(listed, ids) == want


def test_there_are_at_least_18_documented_examples():
    assert len(EXAMPLES) >= 18


def test_the_invalid_operator_example_is_a_value_error(filled):
    m, _ = filled
    with pytest.raises(ValueError, match="unknown"):
        m.search("test query", filters=INVALID)
    with pytest.raises(ValueError, match="unknown"):
        m.get_all(filters=INVALID)


def test_categories_are_the_memories_lifecycle_category(filled):
    """mem0's `categories` (a memory's category list): here every memory has one, its lifecycle category."""
    m, ids = filled
    native = {str(r.id): r.life.category.value for r in m.memory.get_all("alice")}
    some = sorted(set(native.values()))[0]
    want = {i for i, c in native.items() if c == some}
    assert {r["id"] for r in m.get_all(filters={"user_id": "alice", "categories": {"in": [some]}}, top_k=100)["results"]} == want
    part = some[1:3].upper()
    assert {r["id"] for r in m.get_all(filters={"user_id": "alice", "categories": {"contains": part}}, top_k=100)["results"]} \
        == {i for i, c in native.items() if part.casefold() in c}
    assert {r["id"] for r in m.get_all(filters={"user_id": "alice", "NOT": {"categories": {"in": [some]}}},
                                       top_k=100)["results"]} == set(native) - want
    with pytest.raises(ValueError, match="must be one of"):
        m.get_all(filters={"user_id": "alice", "categories": {"in": ["no-such-category"]}})


@pytest.mark.parametrize("filters,said", [
    (None, "at least one of: user_id, agent_id, run_id"),
    ({}, "at least one of: user_id, agent_id, run_id"),
    ({"category": "work"}, "at least one of: user_id, agent_id, run_id"),
    ({"user_id": " "}, "non-empty identifier"),
    ({"user_id": "al ice"}, "without whitespace"),
    ({"user_id": {"in": ["a", "b"]}}, "names one user"),
    ({"user_id": "alice", "AND": [{"user_id": "bob"}]}, "top level of filters"),
    ({"user_id": "alice", "status": {"gtx": 1}}, "unknown filter operator"),
    ({"agent_id": "*"}, "name one agent_id or run_id"),
])
def test_a_bad_filter_is_a_value_error_before_any_work(filled, filters: Any, said: str):
    m, _ = filled
    with pytest.raises(ValueError, match=said):
        m.search("x", filters=filters)
    with pytest.raises(ValueError, match=said):
        m.get_all(filters=filters)
