"""Expiry on any memory (`expires_at` on add and update, lifecycle/expiry.py): words resolved once from
when the memory was said, to the end of the named day in the user's zone; an expired memory leaves
search, list, page and the prompt block at once, decay archives it, `include_expired=True` and history
keep it; a bad value is one InvalidInput line and nothing is written; the REST, Client, MCP and CLI
faces take it too. A dated to-do's own day still only archives it, as before."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from hippocampus import Client, InvalidInput, Memory
from hippocampus.cli.app import app as cli_app
from hippocampus.models import State, now_ts
from hippocampus.server.app import create_app
from hippocampus.text.dates import day_end
from tests.service_support import served

SHANGHAI = ZoneInfo("Asia/Shanghai")


def at(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=SHANGHAI).timestamp())  # type: ignore[misc]


@pytest.fixture(scope="module")
def memory(shared_db: Path, embedder: Any) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"exp_{uuid.uuid4().hex[:10]}", embedder=embedder,
               timezone="Asia/Shanghai")
    yield m
    m.close()


def _user() -> str:
    return f"x{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("said,words,day", [
    ((2026, 11, 26, 23, 50), "until Monday", date(2026, 11, 30)),     # said on a Thursday night: the coming Monday
    ((2026, 11, 26, 9, 0), "到下周一", date(2026, 11, 30)),             # next week's Monday
    ((2026, 11, 30, 0, 5), "until tomorrow", date(2026, 12, 1)),       # across a month, just after midnight
    ((2026, 11, 26, 9, 0), "2026-12-24", date(2026, 12, 24)),          # an ISO date: the end of that day
])
def test_words_resolve_once_to_the_end_of_the_named_day_in_the_users_zone(memory: Memory, said, words: str, day: date):
    user = _user()
    mid = memory.add("My office is closed", user_id=user, ts=at(*said), expires_at=words).ids[0]
    record = memory.get(mid, user)
    assert record.metadata["expires_at"] == record.life.expires_at == day_end(day, SHANGHAI)


def test_absolute_values_and_refusals(memory: Memory):
    user = _user()
    iso = memory.add("Parking pass valid", user_id=user, expires_at="2030-01-02T08:30:00").ids[0]
    assert memory.get(iso, user).metadata["expires_at"] == at(2030, 1, 2, 8, 30)  # naive: the user's zone
    epoch = memory.add("Promo code", user_id=user, expires_at=1_900_000_000).ids[0]
    assert memory.get(epoch, user).life.expires_at == 1_900_000_000
    for bad, said in ((True, "expires_at: .*not true or false"), ("someday maybe", "expires_at names no date"), (-5, "out of range"),
                      ([1], "expires_at: a list is none of the kinds")):  # the first and last refused by AddRequest's types
        with pytest.raises(InvalidInput, match=said):
            memory.add("never written", user_id=user, expires_at=bad)
    with pytest.raises(InvalidInput, match="library owns|owned|expires_at"):
        memory.add("sneaky", user_id=user, metadata={"expires_at": 1})  # the library's key, set only through expires_at
    assert len(memory.get_all(user, include_expired=True)) == 2


def test_an_expired_memory_leaves_search_list_and_the_block_and_decay_archives_it(memory: Memory):
    user = _user()
    gone = memory.add("My office is closed this week", user_id=user, ts=now_ts() - 10 * 86400, expires_at=now_ts() - 60).ids[0]
    kept = memory.add("My office is on the third floor", user_id=user, expires_at="2099-01-01").ids[0]
    memory.curate(gone, user, importance=1.0)  # a score that would put it in the block
    memory.curate(kept, user, importance=1.0)
    assert {h.id for h in memory.search("office", user_id=user).all} == {kept}
    assert {r.id for r in memory.get_all(user)} == {kept} and memory.page(user).total == 1
    assert {h.id for h in memory.search("office", user_id=user, include_expired=True).all} == {gone, kept}
    assert {r.id for r in memory.get_all(user, include_expired=True)} == {gone, kept}
    block = memory.context(user)
    assert "third floor" in block and "closed this week" not in block
    assert memory.history(gone, user)[0].action.value == "created"  # history keeps it
    stats = memory.decay(user)
    assert stats.expired == 1 and memory.get(gone, user).life.state is State.ARCHIVED
    assert memory.get(kept, user).life.state is State.ACTIVE


def test_update_sets_an_expiry_from_now_and_a_todos_own_day_only_archives(memory: Memory):
    user = _user()
    mid = memory.add("The gym is closed", user_id=user).ids[0]
    updated = memory.update(mid, "The gym is closed for repairs", user_id=user, expires_at="tomorrow")
    tomorrow = datetime.fromtimestamp(now_ts(), SHANGHAI).date() + timedelta(days=1)
    assert updated.metadata["expires_at"] == updated.life.expires_at == day_end(tomorrow, SHANGHAI)
    assert {h.id for h in memory.search("gym", user_id=user).all} == {mid}
    memory.update(mid, "The gym is closed for repairs", user_id=user, expires_at=now_ts() - 5)
    assert memory.get_all(user) == []
    memory.undo(memory.history(mid, user)[-1].event_id, user)  # undo puts the earlier expiry back, in both places
    back = memory.get(mid, user)
    assert back.metadata["expires_at"] == back.life.expires_at == day_end(tomorrow, SHANGHAI)
    todo = memory.add("Remind me to call the bank tomorrow", user_id=user, ts=now_ts() - 5 * 86400).ids[0]
    assert memory.get(todo, user).life.expires_at < now_ts()  # its day passed: archived by decay, still listed
    assert todo in {r.id for r in memory.get_all(user)}


def test_every_face_takes_expires_at_and_include_expired(memory: Memory):
    user = _user()
    past = now_ts() - 60
    with served(create_app(memory, close_memory=False, ui=False)) as url:
        added = httpx.post(f"{url}/v1/memories", json={"messages": "Lab closed", "user_id": user, "expires_at": past}, timeout=30).json()
        lab = added["ids"][0]
        refused = httpx.post(f"{url}/v1/memories", json={"messages": "x", "user_id": user, "expires_at": "whenever"}, timeout=30)
        assert refused.status_code == 422 and "expires_at names no date" in refused.text
        with Client(url) as client:
            desk = client.add("Desk 4B is mine", user_id=user).ids[0]
            client.update(desk, "Desk 4B is mine this month", user_id=user, expires_at=past)
            assert client.get_all(user) == []
            assert {r.id for r in client.get_all(user, include_expired=True)} == {lab, desk}
            assert {h.id for h in client.search("desk lab", user_id=user, include_expired=True).all} == {lab, desk}
        runner = CliRunner(env={"COLUMNS": "200"})
        out = runner.invoke(cli_app, ["--server", url, "add", "Canteen shut", "-u", user, "--expires-at", str(past), "--json"])
        assert out.exit_code == 0, out.stderr
        canteen = json.loads(out.stdout)["ids"][0]
        out = runner.invoke(cli_app, ["--server", url, "list", "-u", user, "--include-expired", "--json"])
        assert {r["id"] for r in json.loads(out.stdout)} == {lab, desk, canteen}

        async def tools() -> Any:
            http = httpx2.AsyncClient()
            with anyio.fail_after(60):
                async with http, McpClient(streamable_http_client(url + "/mcp", http_client=http)) as client:
                    await client.call_tool("add_memory", {"text": "Pool open", "user_id": user, "expires_at": "2099-01-01"})
                    return await client.call_tool("list_memories", {"user_id": user})

        listed = anyio.run(tools)
        assert [r["text"] for r in listed.structured_content["items"]] == ["Pool open"]
