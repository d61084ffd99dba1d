"""The curation verbs under the Web UI, at library level: browse (filters, sorts, pages), overview
(the dashboard's counts), delete_many (core skipped, other users' ids not found) and export_view."""

from __future__ import annotations

import json

import pytest

from hippocampus import InvalidInput, Memory
from hippocampus.memory.browse import parse_ids


@pytest.fixture
def stocked(memory: Memory) -> dict[str, int]:
    ids = {
        "berlin": memory.add("I moved to Berlin in May", user_id="u", chat_id="c1", ts=1_700_000_000).ids[0],
        "tea": memory.add("I prefer green tea", user_id="u", chat_id="c1", ts=1_700_000_100).ids[0],
        "lyon": memory.add("My sister lives in Lyon", user_id="u", chat_id="c2", ts=1_700_000_200, memory_type="semantic").ids[0],
        "name": memory.add("My name is Ana", user_id="u", chat_id="c2", ts=1_700_000_300).ids[0],
        "other": memory.add("Bob's secret", user_id="bob").ids[0],
    }
    memory.curate(ids["name"], "u", category="core")
    memory.mark_used(ids["tea"], "u")
    return ids


def test_browse_filters_sorts_and_pages(memory: Memory, stocked):
    texts = lambda page: [r.text for r in page.items]  # noqa: E731
    assert texts(memory.browse("u", memory_type="semantic")) == ["My sister lives in Lyon"]
    assert texts(memory.browse("u", category="core")) == ["My name is Ana"]
    assert texts(memory.browse("u", chat_id="c1", sort="time", descending=False)) == ["I moved to Berlin in May", "I prefer green tea"]
    assert texts(memory.browse("u", text="LYON")) == ["My sister lives in Lyon"]
    assert memory.browse("u", sort="hits").items[0].id == stocked["tea"]
    first = memory.browse("u", sort="id", descending=False, limit=3)
    rest = memory.browse("u", sort="id", descending=False, offset=first.next_offset, limit=3)
    assert (first.total, first.next_offset, rest.next_offset) == (4, 3, None)
    assert [r.id for r in first.items + rest.items] == sorted(stocked[k] for k in ("berlin", "tea", "lyon", "name"))
    assert memory.browse("u", state="archived").total == 0 and memory.browse("u", state="active").total == 4
    for bad in ({"category": "nope"}, {"state": "gone"}, {"sort": "text"}, {"offset": -1}, {"limit": 5000}):
        with pytest.raises(InvalidInput):
            memory.browse("u", **bad)


def test_overview_counts_what_browse_lists(memory: Memory, stocked):
    view = memory.overview("u")
    assert (view.total, view.by_type, view.by_state) == (4, {"episodic": 3, "semantic": 1}, {"active": 4})
    assert view.by_category["core"] == 1 and sum(view.by_category.values()) == 4
    assert sum(view.score_histogram) == 4 and sum(view.added_per_day.values()) == 4
    assert memory.overview("nobody").total == 0


def test_delete_many_skips_core_and_never_touches_another_user(memory: Memory, stocked):
    ids = parse_ids(f"{stocked['berlin']}, {stocked['name']}\n{stocked['other']} {stocked['berlin']};")
    assert ids == [stocked["berlin"], stocked["name"], stocked["other"]]
    result = memory.delete_many(ids, "u")
    assert (result.deleted, result.skipped_core, result.not_found) == ([stocked["berlin"]], [stocked["name"]], [stocked["other"]])
    assert memory.get(stocked["other"], "bob").text == "Bob's secret"
    assert memory.history(stocked["berlin"], "u")[-1].details["row"]["text"] == "I moved to Berlin in May"
    with pytest.raises(InvalidInput):
        memory.delete_many("3, x", "u")
    with pytest.raises(InvalidInput):
        parse_ids("12 -4")


def test_export_view_gives_the_filtered_memories_as_jsonl_or_memory_md(memory: Memory, stocked):
    lines = memory.export_view("u", "jsonl", chat_id="c2").splitlines()
    assert sorted(json.loads(line)["text"] for line in lines) == ["My name is Ana", "My sister lives in Lyon"]
    assert all(json.loads(line)["history"] for line in lines)
    md = memory.export_view("u", "md", category="core")
    assert f"### [{stocked['name']}] core |" in md and "Lyon" not in md
    with pytest.raises(InvalidInput):
        memory.export_view("u", "csv")
