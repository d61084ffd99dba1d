"""Search filters by their documented names (store/filters.py `caller_filter`): chat_id, who,
memory_type, category, state, metadata.<key> and, for older callers, a bare metadata key that some
memory of the user has. Each field selects exactly what the records themselves say, on a real
milvus-lite store; an unknown field is InvalidInput naming the fields, never an empty answer."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hippocampus import InvalidInput, Memory
from hippocampus.cli.app import app
from hippocampus.models import MemoryRecord
from hippocampus.server.app import create_app
from tests.service_support import app_http

ALL = ["episodic", "semantic", "procedural"]


@pytest.fixture(scope="module")
def setup(shared_db: Path, embedder: Any) -> Iterator[tuple[Memory, dict[str, int]]]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"ff_{uuid.uuid4().hex[:10]}", embedder=embedder)
    ids = {
        "a": m.add("My sister Ana lives in Lisbon", user_id="u", chat_id="c9", who="ana", metadata={"project": "family"}).ids[0],
        "b": m.add("My sister called about the garden", user_id="u", chat_id="c1",
                   metadata={"project": "home", "nested": {"k": "v"}}).ids[0],
        "c": m.add("The user's sister is named Ana", user_id="u", chat_id="c9", memory_type="semantic").ids[0],
        "d": m.add("To call my sister, use the landline", user_id="u", chat_id="c2", memory_type="procedural").ids[0],
        "e": m.add("My sister lives in Porto", user_id="u", chat_id="c3", memory_type="semantic").ids[0],
        "f": m.add("My sister's old flat had a red door", user_id="u", chat_id="c4").ids[0],
        "other": m.add("My sister lives in Lisbon", user_id="someone-else", chat_id="c9").ids[0],
    }
    m.curate(ids["b"], "u", category="preference")
    _set_life(m, ids["e"], superseded_by=ids["c"])  # what the contradiction judge writes
    _set_life(m, ids["f"], state="archived")  # what decay writes
    yield m, ids
    m.close()


def _set_life(m: Memory, memory_id: int, **life: Any) -> None:
    (row,) = m.store.query(f"id == {memory_id}", fields=["*"], limit=1)
    row = {k: v for k, v in row.items() if k != "sparse"}  # BM25's output field is the collection's to fill
    row["metadata"] = {**row["metadata"], "life": {**row["metadata"]["life"], **life}}
    m.store.upsert([row])


def _searched(m: Memory, filters: dict[str, Any]) -> set[int]:
    kinds = None if "memory_type" in filters else ALL
    res = m.search("sister", user_id="u", limit=50, filters=filters, memory_types=kinds)
    return {h.id for h in res.episodic + res.semantic + res.procedural}


def _state(r: MemoryRecord) -> str:
    return "superseded" if r.life.superseded_by is not None else r.life.state.value


# field filter -> (what the record says, the ids that must match, written out)
CASES: list[tuple[dict[str, Any], Callable[[MemoryRecord], bool], set[str]]] = [
    ({"chat_id": "c9"}, lambda r: r.chat_id == "c9", {"a", "c"}),
    ({"chatid": "c9"}, lambda r: r.chat_id == "c9", {"a", "c"}),  # episodic metadata's name for the column
    ({"who": "ana"}, lambda r: r.who == "ana", {"a"}),
    ({"memory_type": "semantic"}, lambda r: r.memory_type.value == "semantic", {"c"}),
    ({"memory_type": "procedural"}, lambda r: r.memory_type.value == "procedural", {"d"}),
    ({"category": "preference"}, lambda r: r.life.category.value == "preference", {"b"}),
    ({"state": "archived"}, lambda r: _state(r) == "archived", {"f"}),
    ({"state": "superseded"}, lambda r: _state(r) == "superseded", {"e"}),
    ({"state": "active"}, lambda r: _state(r) == "active", {"a", "b", "c", "d"}),
    ({"metadata.project": "family"}, lambda r: r.metadata.get("project") == "family", {"a"}),
    ({"project": "home"}, lambda r: r.metadata.get("project") == "home", {"b"}),  # a bare key some memory has
    ({"metadata.nested.k": "v"}, lambda r: (r.metadata.get("nested") or {}).get("k") == "v", {"b"}),
    ({"chat_id": "c9", "memory_type": "episodic"}, lambda r: r.chat_id == "c9" and r.memory_type.value == "episodic", {"a"}),
]


@pytest.mark.parametrize("filters,holds,names", CASES, ids=[str(c[0]) for c in CASES])
def test_each_documented_field_selects_what_the_records_say(setup, filters, holds, names):
    m, ids = setup
    records = m.get_all("u") + m.get_all("u", memory_type="procedural")
    by_records = {r.id for r in records if holds(r) and (filters.get("state") == "superseded" or _state(r) != "superseded")}
    assert by_records == {ids[n] for n in names}  # the fixture is what the case says
    assert _searched(m, filters) == by_records


@pytest.mark.parametrize("filters,holds,names", CASES, ids=[str(c[0]) for c in CASES])
def test_the_list_takes_the_same_filters(setup, filters, holds, names):
    """browse, the library's filtered list (the Web UI's), superseded memories included unless `state` says."""
    m, _ = setup
    records = m.get_all("u") + m.get_all("u", memory_type="procedural")
    listed = m.browse("u", filters=filters, limit=100)
    assert {r.id for r in listed.items} == {r.id for r in records if holds(r)} and listed.total == len(listed.items)


def test_the_list_refuses_an_unknown_field(setup):
    m, _ = setup
    with pytest.raises(InvalidInput, match="chat_id"):
        m.browse("u", filters={"chat": "c9"})


def test_a_category_default_holds_for_a_memory_without_one(setup):
    m, ids = setup
    facts = _searched(m, {"category": "fact"})
    assert ids["c"] in facts and ids["a"] not in facts
    assert {r.id for r in m.get_all("u") if r.life.category.value == "fact" and _state(r) != "superseded"} == facts


@pytest.mark.parametrize("filters,named", [
    ({"chat": "c9"}, "chat_id"),  # a misspelt field: no memory has a metadata key "chat"
    ({"user_id": "u"}, "chat_id"),
    ({"category": "hobby"}, "metadata.category"),
    ({"state": "gone"}, "metadata.state"),
    ({"memory_type": "dream"}, "procedural"),
    ({"who": 3.5}, "string"),
    ({"metadata.": "x"}, "metadata.<key>"),
])
def test_an_unknown_field_or_value_is_refused_naming_what_works(setup, filters, named):
    m, _ = setup
    with pytest.raises(InvalidInput, match=named.replace(".", r"\.").replace("<", ".").replace(">", ".")):
        m.search("sister", user_id="u", filters=filters)


def test_an_explicit_metadata_key_nobody_has_matches_nothing_without_error(setup):
    m, _ = setup
    assert _searched(m, {"metadata.nobody_has_this": "x"}) == set()
    with pytest.raises(InvalidInput, match="nobody_has_this"):
        _searched(m, {"nobody_has_this": "x"})


def test_a_user_without_memories_gets_the_same_refusal(setup):
    m, _ = setup
    with pytest.raises(InvalidInput, match="unknown filter field"):
        m.search("sister", user_id="nobody-yet", filters={"chat": "c9"})
    assert len(m.search("sister", user_id="nobody-yet", filters={"chat_id": "c9"})) == 0


def test_rest_filters_by_the_documented_name_and_refuses_an_unknown_one(setup):
    m, ids = setup
    with app_http(create_app(m, close_memory=False, mcp=False, ui=False)) as http:
        ok = http.post("/v1/search", json={"query": "sister", "user_id": "u", "filters": {"chat_id": "c9"}})
        assert ok.status_code == 200, ok.text
        body = ok.json()
        assert {h["memory"]["id"] for h in body["episodic"] + body["semantic"]} == {ids["a"], ids["c"]}
        bad = http.post("/v1/search", json={"query": "sister", "user_id": "u", "filters": {"chat": "c9"}})
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "InvalidInput"
        assert "chat_id" in bad.json()["error"]["message"]


def test_cli_filter_by_the_documented_name(fresh_path: str):
    runner = CliRunner(env={"COLUMNS": "200"})

    def cli(*args: str) -> Any:
        return runner.invoke(app, ["--uri", fresh_path, *args])

    assert cli("add", "My sister Ana lives in Lisbon", "-u", "erin", "-c", "c9").exit_code == 0
    assert cli("add", "My sister phoned", "-u", "erin", "-c", "123", "-m", "project=home").exit_code == 0
    found = cli("search", "sister", "-u", "erin", "-f", "chat_id=c9", "--json")
    assert found.exit_code == 0, found.output
    assert [h["text"] for h in json.loads(found.stdout)["episodic"]] == ["My sister Ana lives in Lisbon"]
    numeric = json.loads(cli("search", "sister", "-u", "erin", "-f", "chat_id=123", "--json").stdout)
    assert [h["text"] for h in numeric["episodic"]] == ["My sister phoned"]
    bad = cli("search", "sister", "-u", "erin", "-f", "chat=c9")
    assert bad.exit_code == 2 and "chat_id" in bad.stderr and "Traceback" not in bad.output
