"""A superseded value answers only questions about the past (issue 55, retrieval/as_of.py): `search(as_of=T)`
reads the memories as they stood at T on every face, and a question about the past ("where did I live
before?", "我以前住在哪") gets the superseded value first, while a present question never does. Before, a
superseded memory was either gone from every search or (include_superseded) ranked as if current."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
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
from hippocampus.retrieval.as_of import asks_past, moment
from hippocampus.server.app import create_app
from tests.service_support import served

T1, T2 = 1_767_225_600, 1_775_000_000  # 2026-01-01 and 2026-03-31 (UTC)
BETWEEN, AFTER = "2026-02-15", T2 + 3600

PAIRS = [  # (earlier, later, old word, new word, past question, present question)
    ("I live in Portland.", "Actually I moved from Portland to Denver last month.", "Portland", "Denver",
     "Where did I live before?", "Where do I live?"),
    ("I work at Ledgerly as a product manager.", "I started a new job at Stripe as a staff engineer, I left Ledgerly.",
     "Ledgerly", "Stripe", "What was my old job?", "Where do I work?"),
    ("我住在南京", "我搬到杭州了", "南京", "杭州", "我以前住在哪", "我住在哪"),
    ("我在德勤工作", "我不在德勤了，现在在腾讯工作", "德勤", "腾讯", "我之前在哪家公司工作", "我在哪家公司工作"),
]


@pytest.fixture(scope="module")
def memory(shared_db: Path, embedder: Any) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"asof_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


def _corrected(memory: Memory, old: str, new: str) -> tuple[str, int, int]:
    user = f"a{uuid.uuid4().hex[:8]}"
    first = memory.add(old, user_id=user, infer=True, ts=T1).ids[0]
    second = memory.add(new, user_id=user, infer=True, ts=T2).ids
    assert memory.get(first, user).life.superseded_by in second, "the later turn supersedes the earlier"
    return user, first, second[0]


@pytest.mark.parametrize("old,new,was,now,past_q,present_q", PAIRS, ids=["home-en", "job-en", "home-zh", "job-zh"])
def test_past_questions_get_the_old_value_first_and_present_ones_never(memory: Memory, old, new, was, now, past_q, present_q):
    user, first, second = _corrected(memory, old, new)
    past = [h.id for h in memory.search(past_q, user_id=user).all]
    assert past[:2] == [first, second], past  # the old value first, and nothing lost: the new one next to it
    present = [h.id for h in memory.search(present_q, user_id=user).all]
    assert present and present[0] == second and first not in present, present
    # asked for superseded memories on a present question: the replaced one comes after its replacement
    both = [h.id for h in memory.search(present_q, user_id=user, include_superseded=True).all]
    assert first in both and both.index(first) > both.index(second), both


@pytest.mark.parametrize("old,new,was,now,past_q,present_q", PAIRS[:1] + PAIRS[2:3], ids=["en", "zh"])
def test_as_of_reads_the_memories_as_they_stood(memory: Memory, old, new, was, now, past_q, present_q):
    user, first, second = _corrected(memory, old, new)
    then = memory.search(present_q, user_id=user, as_of=BETWEEN).all
    assert [h.id for h in then] == [first]  # current then; the correction was not yet said
    later = {h.id for h in memory.search(present_q, user_id=user, as_of=AFTER).all}
    assert second in later and first not in later
    assert memory.search(present_q, user_id=user, as_of=datetime(2025, 6, 1, tzinfo=timezone.utc)).all == []
    assert [h.id for h in memory.search(present_q, user_id=user, as_of=T1 + 60).all] == [first]


def test_as_of_is_checked() -> None:
    assert moment("2026-02-15") == int(datetime(2026, 2, 15, 23, 59, 59, tzinfo=timezone.utc).timestamp())
    assert moment(str(T1)) == T1 and moment(T1) == T1 and moment(None) is None
    for bad in ("last spring", True, -5, [1]):
        with pytest.raises(InvalidInput, match="as_of"):
            moment(bad)


@pytest.mark.parametrize("query,past", [
    ("where did I live before?", True), ("what was my old job", True), ("What was my previous rent?", True),
    ("where did I use to work", True), ("what do I use to clean it", False), ("我以前住在哪", True), ("以前", True),
    ("我之前的公司", True), ("how old am I", False), ("what should I pack before the trip", False),
    ("Where do I live?", False), ("我住在哪", False), ("what did you recommend", False),
])
def test_which_questions_ask_about_the_past(query: str, past: bool) -> None:
    assert asks_past(query) is past


def test_every_face_takes_as_of(memory: Memory) -> None:
    user, first, second = _corrected(memory, *PAIRS[0][:2])
    with served(create_app(memory, close_memory=False, ui=False)) as url:
        body = {"query": "Where do I live?", "user_id": user, "as_of": BETWEEN}
        got = httpx.post(f"{url}/v1/search", json=body, timeout=30).json()
        assert [h["memory"]["id"] for h in got["episodic"] + got["semantic"]] == [first]
        refused = httpx.post(f"{url}/v1/search", json={**body, "as_of": "last spring"}, timeout=30)
        assert refused.status_code == 422 and "as_of" in refused.text
        with Client(url) as client:
            assert [h.id for h in client.search("Where do I live?", user_id=user, as_of=datetime(2026, 2, 15)).all] == [first]
        out = CliRunner(env={"COLUMNS": "200"}).invoke(cli_app, ["--server", url, "search", "Where do I live?", "-u", user,
                                                                 "--as-of", BETWEEN, "--json"])
        assert out.exit_code == 0, out.stderr
        found = json.loads(out.stdout)
        assert [h["id"] for h in found["episodic"] + found["semantic"]] == [first]

        async def tools() -> Any:
            http = httpx2.AsyncClient()
            with anyio.fail_after(60):
                async with http, McpClient(streamable_http_client(url + "/mcp", http_client=http)) as client:
                    return await client.call_tool("search_memory", {"query": "Where do I live?", "user_id": user, "as_of": BETWEEN})

        assert [m["id"] for m in anyio.run(tools).structured_content["memories"]] == [first]
