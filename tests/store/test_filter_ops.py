"""Filter operators in mem0's syntax (hippocampus/store/filter_ops.py, docs/filters.md): a bad filter is
one InvalidInput line before any work; what is exact in Milvus is pushed down and the rest resolved to
ids, the escaping intact; the same filter on every face (library search / list / page, REST's search
body and list query parameter, the Client, MCP, the CLI's --filter JSON beside -f key=value)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from hippocampus import Client, InvalidInput, Memory
from hippocampus.cli.app import app as cli_app
from hippocampus.server.app import create_app
from hippocampus.store import filters as F
from tests.service_support import served

BAD: list[tuple[dict[str, Any], str]] = [
    ({"priority": {"gtx": 3}}, "unknown filter operator 'gtx' on 'priority'; use one of eq, ne, gt"),
    ({"priority": {}}, "empty operator object"),
    ({"source": {"in": "web"}}, "in takes a list of at most 100"),
    ({"source": {"in": [{"a": 1}]}}, "in takes a list"),
    ({"priority": {"gte": True}}, "gte compares numbers or text"),
    ({"priority": {"gte": [1]}}, "gte takes a string, number or boolean"),
    ({"priority": {"exists": "yes"}}, "exists takes true or false"),
    ({"title": {"contains": ""}}, "contains takes a non-empty string"),
    ({"ts": {"contains": "2026"}}, "contains applies to text fields and metadata, not to ts"),
    ({"ts": {"gt": "last week"}}, "takes epoch seconds or an ISO datetime"),
    ({"category": {"gt": "fact"}}, "gt compares numbers or text, not"),
    ({"category": {"in": ["nope"]}}, "must be one of"),
    ({"memory_type": "memory"}, "memory_type must be episodic, semantic or procedural"),
    ({"text": {"contains": "x"}}, "'text' is not a filter field"),
    ({"user_id": {"ne": "x"}}, "'user_id' is not a filter field"),
    ({"bad key": {"eq": 1}}, "unknown filter field 'bad key'"),
    ({"metadata.": {"eq": 1}}, "a metadata filter names 1 to 8 keys"),
    ({"and": [{"a": 1}]}, "combinators are written AND, OR, NOT (upper case)"),
    ({"AND": []}, "AND takes a non-empty list"),
    ({"OR": {"a": 1}}, "OR takes a non-empty list"),
    ({"NOT": []}, "NOT takes a filter or a non-empty list"),
    ({"chat_id": {"eq": 1.5}}, "takes a string, got float"),
    ({"n": {"eq": float("nan")}}, "finite"),
]


def _deep(levels: int) -> dict[str, Any]:
    f: dict[str, Any] = {"chat_id": "c1"}
    for _ in range(levels):
        f = {"NOT": f}
    return f


@pytest.mark.parametrize("bad,said", BAD + [(_deep(8), "deeper than 8 levels"),
                                            ({"OR": [{f"k{i}": i} for i in range(101)]}, "at most 100 conditions")])
def test_a_bad_filter_is_one_line_before_any_work(bad: dict[str, Any], said: str):
    with pytest.raises(InvalidInput) as caught:
        F.caller_filter(bad)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_depth_seven_is_accepted_and_pushed_down_whole():
    assert F.caller_filter(_deep(7)).residual is None


def test_exact_parts_go_to_milvus_escaped_and_the_rest_is_resolved_to_ids():
    evil = 'x" or user_id != "'
    f = F.caller_filter({"chat_id": {"in": [evil, "c2"]}, "who": {"ne": evil}, "ts": {"gte": "2026-01-01T00:00:00Z"},
                         "metadata.source": {"in": ["web", evil]}, "priority": {"gte": 3}})
    assert f.expr == ('(chat_id in ["x\\" or user_id != \\"", "c2"]) and (who != "x\\" or user_id != \\"") and (ts >= 1767225600) '
                      'and ((metadata["source"] == "web") or (metadata["source"] == "x\\" or user_id != \\""))')
    assert f.residual is not None and f.bare == ["priority"]  # a number in JSON: Milvus' `==` and `>=` are loosely typed
    negated = F.caller_filter({"NOT": {"source": "web"}})
    assert negated.expr == "" and negated.residual is not None  # three-valued NOT in Milvus: Python decides


@pytest.fixture(scope="module")
def store(shared_db: Path, embedder: Any) -> Iterator[tuple[Memory, dict[str, int]]]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"fo_{uuid.uuid4().hex[:10]}", embedder=embedder)
    ids = {
        "urgent": m.add("Renew the passport before the trip", user_id="u", chat_id="c1", metadata={"priority": 5, "source": "web"}).ids[0],
        "low": m.add("Water the passport photo plant", user_id="u", chat_id="c2", metadata={"priority": 1, "source": "Email"}).ids[0],
        "none": m.add("The passport office opens at nine", user_id="u", chat_id="c1").ids[0],
        "pct": m.add("A passport discount of 50%_off", user_id="u", chat_id="c3", metadata={"priority": 3, "source": "50%_off"}).ids[0],
        "other": m.add("Renew the passport", user_id="v", chat_id="c1", metadata={"priority": 9, "source": "web"}).ids[0],
    }
    yield m, ids
    m.close()


def _names(ids: dict[str, int], found: Any) -> set[str]:
    back = {v: k for k, v in ids.items()}
    return {back[i] for i in found}


CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"priority": {"gte": 3}}, {"urgent", "pct"}),
    ({"source": {"in": ["web", "Email"]}}, {"urgent", "low"}),
    ({"source": {"icontains": "EMAIL"}}, {"low"}),
    ({"source": {"contains": "%_"}}, {"pct"}),  # % and _ are text, not wildcards
    ({"source": {"contains": "0%"}}, {"pct"}),
    ({"priority": {"exists": False}}, {"none"}),
    ({"OR": [{"chat_id": "c2"}, {"priority": {"gt": 4}}]}, {"urgent", "low"}),
    ({"NOT": {"source": "web"}}, {"low", "none", "pct"}),
    ({"AND": [{"chat_id": {"ne": "c3"}}, {"NOT": {"priority": {"lt": 2}}}]}, {"urgent", "none"}),
]


@pytest.mark.parametrize("f,want", CASES)
def test_library_search_list_and_page_agree(store, f: dict[str, Any], want: set[str]):
    m, ids = store
    assert _names(ids, {h.id for h in m.search("passport", user_id="u", limit=20, filters=f).all}) == want
    assert _names(ids, {r.id for r in m.get_all("u", filters=f)}) == want
    page = m.page("u", filters=f, limit=1)
    assert page.total == len(want) and len(page.items) == min(1, len(want))


def test_every_face_takes_the_same_filter(store, tmp_path: Path):
    m, ids = store
    f = {"OR": [{"priority": {"gte": 5}}, {"source": {"icontains": "email"}}]}
    want = {"urgent", "low"}
    with served(create_app(m, close_memory=False, ui=False)) as url:
        searched = httpx.post(f"{url}/v1/search", json={"query": "passport", "user_id": "u", "filters": f}, timeout=30).json()
        assert _names(ids, {h["memory"]["id"] for h in searched["episodic"]}) == want
        listed = httpx.get(f"{url}/v1/memories", params={"user_id": "u", "filters": json.dumps(f)}, timeout=30).json()
        assert _names(ids, {r["id"] for r in listed["items"]}) == want and listed["total"] == 2
        bad = httpx.get(f"{url}/v1/memories", params={"user_id": "u", "filters": '{"priority": {"gtx": 1}}'}, timeout=30)
        assert bad.status_code == 422 and "unknown filter operator 'gtx'" in bad.text
        broken = httpx.get(f"{url}/v1/memories", params={"user_id": "u", "filters": "{not json"}, timeout=30)
        assert broken.status_code == 422 and "filters must be a JSON object" in broken.text
        with Client(url) as client:
            assert _names(ids, {r.id for r in client.get_all("u", filters=f)}) == want
            assert _names(ids, {h.id for h in client.search("passport", user_id="u", filters=f).all}) == want
            assert client.page("u", filters=f).total == 2

        async def tools() -> tuple[Any, Any]:
            http = httpx2.AsyncClient()
            with anyio.fail_after(60):
                async with http, McpClient(streamable_http_client(url + "/mcp", http_client=http)) as client:
                    listed = await client.call_tool("list_memories", {"user_id": "u", "filters": f})
                    found = await client.call_tool("search_memory", {"query": "passport", "user_id": "u", "filters": f})
                    return listed, found

        listed_mcp, found_mcp = anyio.run(tools)
        assert _names(ids, {r["id"] for r in listed_mcp.structured_content["items"]}) == want
        assert _names(ids, {r["id"] for r in found_mcp.structured_content["memories"]}) == want

        runner = CliRunner(env={"COLUMNS": "200"})
        out = runner.invoke(cli_app, ["--server", url, "list", "-u", "u", "--filter", json.dumps(f), "-f", "chat_id=c1", "--json"])
        assert out.exit_code == 0, out.stderr
        assert _names(ids, {r["id"] for r in json.loads(out.stdout)}) == {"urgent"}  # the JSON filter AND chat_id=c1
        out = runner.invoke(cli_app, ["--server", url, "search", "passport", "-u", "u", "--filter", json.dumps(f), "--json"])
        assert out.exit_code == 0, out.stderr
        assert _names(ids, {h["id"] for h in json.loads(out.stdout)["episodic"]}) == want
        out = runner.invoke(cli_app, ["--server", url, "list", "-u", "u", "--filter", "{oops"])
        assert out.exit_code == 2 and "--filter takes key=value or a JSON object" in out.stderr


def test_the_default_search_keeps_milvus_lites_fast_path(store):
    """The expiry and superseded parts of a search's scope are dropped from milvus-lite's filter and checked
    on the rows instead (retrieval/rows.py `lite_scope`): a JSON path in its filter costs ~90% of a search."""
    from hippocampus.retrieval.rows import lite_scope as _lite_scope

    m, _ = store
    retriever = m._records.ctx.retriever
    default = retriever.scope("u", None, None, include_superseded=False, include_expired=False)
    assert 'metadata["expires_at"]' in default and _lite_scope(m.store, default) == '(user_id == "u")'
    assert _lite_scope(m.store, retriever.scope("u", None, None, include_expired=True)) is None  # exact, the slow way
