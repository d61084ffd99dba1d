"""update_many and delete_many on every face (library, REST, Client, MCP, CLI): a result per item,
the 1,000 cap, another tenant's ids answered not_found and never touched, a malformed batch refused
with nothing changed, history written per item and one item's undo. One real store and one real
service (uvicorn on a loopback port, two tenant keys) for the module."""

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

from hippocampus import Client, InvalidInput, Memory, StoreError
from hippocampus.cli.app import app as cli_app
from hippocampus.models import HistoryAction
from hippocampus.server.app import create_app
from hippocampus.server.auth import KeyRing, _entry
from tests.service_support import served

ALICE_KEY, BOB_KEY = "alice-Qm7vT2xLp9RkW4nZc8HbYd3FsJ6gAe1U", "bob-Vn4cX8wKt2PqL7mRz9HdGy5BjS3fEa6N"


@pytest.fixture(scope="module")
def memory(shared_db: Path, embedder: Any) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"batch_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


@pytest.fixture(scope="module")
def url(memory: Memory) -> Iterator[str]:
    keys = KeyRing([_entry(ALICE_KEY, ["alice"], "alice"), _entry(BOB_KEY, ["bob"], "bob")])
    with served(create_app(memory, keys, ui=False, close_memory=False)) as base:
        yield base


def fresh(memory: Memory, *texts: str, user: str | None = None) -> tuple[str, list[int]]:
    """A new user (unless given) with these memories; (user, ids)."""
    user = user or f"u{uuid.uuid4().hex[:8]}"
    return user, memory.add_many([{"text": t, "user_id": user} for t in texts])


def events(memory: Memory, memory_id: int, user: str, action: HistoryAction) -> list[Any]:
    return [e for e in memory.history(memory_id, user) if e.action is action]


# ---------------------------------------------------------------------- the library
def test_update_many_reports_each_item_writes_history_per_item_and_one_undo_reverses_one(memory: Memory):
    user, (a, b, c) = fresh(memory, "I live in Lyon", "I drink tea", "I work at a bakery")
    bob, (other,) = fresh(memory, "bob's locker code is 4711")
    result = memory.update_many([{"memory_id": a, "text": "I live in Porto"}, {"memory_id": b, "text": "I drink tea"},
                                 {"memory_id": other, "text": "stolen"}, {"memory_id": 2**62, "text": "nobody"},
                                 {"memory_id": c, "text": "I work at a bakery", "metadata": {"shift": "early"},
                                  "expires_at": 4_102_444_800}], user)
    assert [(r.id, r.status) for r in result.results] == [(a, "ok"), (b, "unchanged"), (other, "not_found"),
                                                          (2**62, "not_found"), (c, "ok")]
    assert result.counts == {"ok": 2, "unchanged": 1, "not_found": 2} and result.ids("ok") == [a, c]
    assert result.results[2].error == f"memory {other} not found for this user"  # the 404 rule's words, nothing more
    assert memory.get(a, user).text == "I live in Porto" and memory.get(c, user).metadata["shift"] == "early"
    assert memory.get(c, user).metadata["expires_at"] == 4_102_444_800  # as `update` writes it
    assert memory.get(other, bob).text == "bob's locker code is 4711" and events(memory, other, bob, HistoryAction.UPDATED) == []
    assert events(memory, b, user, HistoryAction.UPDATED) == []  # unchanged: nothing written
    (update_a,) = events(memory, a, user, HistoryAction.UPDATED)
    assert (update_a.old_text, update_a.new_text) == ("I live in Lyon", "I live in Porto")
    memory.undo(update_a.event_id, user)
    assert memory.get(a, user).text == "I live in Lyon" and memory.get(c, user).metadata["shift"] == "early"


def test_a_store_failure_on_one_item_is_reported_and_the_others_are_applied(memory: Memory):
    user, ids = fresh(memory, "first old", "second old", "third old")
    calls = {"n": 0}
    upsert = memory.store.upsert

    def failing_second(rows: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise StoreError("injected: the store went away")
        upsert(rows)

    memory.store.upsert = failing_second  # type: ignore[method-assign]
    try:
        result = memory.update_many([{"memory_id": i, "text": f"new {n}"} for n, i in enumerate(ids)], user)
    finally:
        del memory.store.upsert
    assert [r.status for r in result.results] == ["ok", "failed", "ok"]
    assert result.results[1].error == "StoreError: injected: the store went away"
    assert [memory.get(i, user).text for i in ids] == ["new 0", "second old", "new 2"]
    assert events(memory, ids[1], user, HistoryAction.UPDATED) == []  # its event taken back with the failed write


def test_a_malformed_batch_or_one_over_the_cap_is_refused_whole_and_nothing_changes(memory: Memory):
    user, (a, b) = fresh(memory, "keep me", "keep me too")
    bad_batches = {
        "items[1]: text must not be empty": [{"memory_id": a, "text": "changed"}, {"memory_id": b, "text": "  "}],
        "items[1]: memory_id must be an integer": [{"memory_id": a, "text": "changed"}, {"memory_id": "x", "text": "y"}],
        "items[0]: unknown key 'txt'": [{"memory_id": a, "txt": "changed"}],
        "items[1]: expires_at": [{"memory_id": a, "text": "changed"}, {"memory_id": b, "text": "y", "expires_at": "whenever"}],
        "items[1]: memory": [{"memory_id": a, "text": "one"}, {"memory_id": a, "text": "two"}],
        "items[1]: metadata['created_at'] is written by hippocampus": [{"memory_id": a, "text": "changed"},
                                                                      {"memory_id": b, "text": "y", "metadata": {"created_at": 1}}],
        "at most 1000 items per call, got 1001": [{"memory_id": a, "text": "changed"}] * 1001,
        "items must be a list": {"memory_id": a, "text": "changed"},
    }
    for message, items in bad_batches.items():
        with pytest.raises(InvalidInput, match=message.replace("[", r"\[").replace("]", r"\]")):
            memory.update_many(items, user)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="at most 1000 memory_ids per call, got 1001"):
        memory.delete_many([a] * 1001, user)
    with pytest.raises(InvalidInput):
        memory.delete_many([a, -4], user)
    assert [memory.get(i, user).text for i in (a, b)] == ["keep me", "keep me too"]
    assert [e.action for e in memory.history(a, user)] == [HistoryAction.CREATED]
    assert memory.update_many([], user).results == [] and memory.delete_many([], user).results == []


def test_delete_many_reports_each_id_skips_core_and_one_undo_brings_one_back(memory: Memory):
    user, (a, b, core) = fresh(memory, "old flat", "old car", "My name is Ana")
    memory.curate(core, user, category="core")
    bob, (other,) = fresh(memory, "bob's diary")
    result = memory.delete_many([a, str(b), other, core, a], user)
    assert [(r.id, r.status) for r in result.results] == [(a, "ok"), (b, "ok"), (other, "not_found"), (core, "invalid")]
    assert "core memory" in result.results[3].error and (result.deleted, result.skipped_core, result.not_found) == ([a, b], [core], [other])
    assert memory.get(other, bob).text == "bob's diary" and memory.get(core, user).text == "My name is Ana"
    (gone_a,), (gone_b,) = events(memory, a, user, HistoryAction.DELETED), events(memory, b, user, HistoryAction.DELETED)
    assert gone_a.details["batch"] is True and gone_b.details["row"]["text"] == "old car"
    back = memory.undo(gone_b.event_id, user)
    assert sorted(r.text for r in memory.get_all(user)) == ["My name is Ana", "old car"] and back.memory_ids


# ---------------------------------------------------------------------- REST and the Client
def test_rest_and_client_give_the_same_results_and_never_touch_another_tenant(memory: Memory, url: str):
    _, (a, b) = fresh(memory, "alice lives in Lyon", "alice likes jazz", user="alice")
    _, (bobs,) = fresh(memory, "bob's locker code is 4711", user="bob")
    with Client(url, api_key=ALICE_KEY) as client:
        updated = client.update_many([{"memory_id": a, "text": "alice lives in Porto"}, {"memory_id": bobs, "text": "0000"}], "alice")
        assert [(r.id, r.status) for r in updated.results] == [(a, "ok"), (bobs, "not_found")] and updated.counts["ok"] == 1
        deleted = client.delete_many(f"{b}, {bobs}", "alice")
        assert [(r.id, r.status) for r in deleted.results] == [(b, "ok"), (bobs, "not_found")]
        with pytest.raises(InvalidInput, match=r"items\[0\]: text"):
            client.update_many([{"memory_id": a, "text": ""}], "alice")
        with pytest.raises(InvalidInput, match="at most 1000"):
            client.delete_many([a] * 1001, "alice")
    assert memory.get(a, "alice").text == "alice lives in Porto" and memory.get(bobs, "bob").text == "bob's locker code is 4711"
    alice = {"Authorization": f"Bearer {ALICE_KEY}"}
    foreign = httpx.post(url + "/v1/memories/batch/delete", json={"user_id": "bob", "memory_ids": [bobs]}, headers=alice)
    assert foreign.status_code == 404 and foreign.json()["error"]["message"] == "user 'bob' not found"
    refused = httpx.post(url + "/v1/memories/batch/update", headers=alice,
                         json={"user_id": "alice", "items": [{"memory_id": a, "text": "x"}] * 1001})
    assert refused.status_code == 422 and refused.json()["error"]["type"] == "InvalidInput"
    assert memory.get(a, "alice").text == "alice lives in Porto" and memory.get(bobs, "bob").text == "bob's locker code is 4711"


# ---------------------------------------------------------------------- MCP
def test_mcp_batch_tools_report_each_item_and_never_touch_another_tenant(memory: Memory, url: str):
    _, (a, b) = fresh(memory, "alice has a cat", "alice has a dog", user="alice")
    _, (bobs,) = fresh(memory, "bob has a parrot", user="bob")

    async def talk() -> tuple[Any, Any, Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE_KEY}"})
        with anyio.fail_after(60):  # a hang fails the test, not the suite
            async with http, McpClient(streamable_http_client(url + "/mcp", http_client=http)) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert tools["delete_memories"].annotations.destructive_hint
                updated = await client.call_tool("update_memories", {"user_id": "alice", "items": [
                    {"memory_id": a, "text": "alice has two cats"}, {"memory_id": bobs, "text": "no parrot"}]})
                deleted = await client.call_tool("delete_memories", {"user_id": "alice", "memory_ids": [b, bobs]})
                foreign = await client.call_tool("delete_memories", {"user_id": "bob", "memory_ids": [bobs]})
                return updated, deleted, foreign

    updated, deleted, foreign = anyio.run(talk)
    assert not updated.is_error and [(r["id"], r["status"]) for r in updated.structured_content["results"]] == [
        (a, "ok"), (bobs, "not_found")]
    assert deleted.structured_content["counts"] == {"ok": 1, "not_found": 1}
    assert foreign.is_error and foreign.content[0].text == "NotFound: user 'bob' not found"
    assert memory.get(a, "alice").text == "alice has two cats" and memory.get(bobs, "bob").text == "bob has a parrot"


# ---------------------------------------------------------------------- the CLI (through the service)
def cli(url: str, *args: str, code: int = 0, stdin: str | None = None) -> Any:
    result = CliRunner(env={"COLUMNS": "200", "HIPPOCAMPUS_API_KEY": ALICE_KEY}).invoke(cli_app, ["--server", url, *args], input=stdin)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result


def test_cli_update_many_and_delete_many(memory: Memory, url: str, tmp_path: Path):
    _, (a, b, c) = fresh(memory, "alice flies on Monday", "alice rents a car", "alice books a hotel", user="alice")
    lines = [json.dumps({"memory_id": a, "text": "alice flies on Tuesday"}), "", json.dumps({"memory_id": b, "text": "alice rents a car"})]
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = json.loads(cli(url, "update-many", "--file", str(tmp_path / "items.jsonl"), "-u", "alice", "--json").stdout)
    assert [(r["id"], r["status"]) for r in report["results"]] == [(a, "ok"), (b, "unchanged")]
    (tmp_path / "bad.jsonl").write_text(lines[0] + "\n{not json\n", encoding="utf-8")
    refused = cli(url, "update-many", "--file", str(tmp_path / "bad.jsonl"), "-u", "alice", code=2)
    assert "line 2: not JSON" in refused.stderr
    table = cli(url, "update-many", "--file", "-", "-u", "alice", stdin=json.dumps({"memory_id": 2**62, "text": "x"}), code=1).stdout
    assert "not_found" in table  # exit 1: not every item ended ok or unchanged
    (tmp_path / "ids.txt").write_text(f"{c}\n", encoding="utf-8")
    deleted = json.loads(cli(url, "delete-many", str(b), "--file", str(tmp_path / "ids.txt"), "-u", "alice", "--json").stdout)
    assert deleted["deleted"] == [b, c] and deleted["counts"] == {"ok": 2}
    assert [r.text for r in memory.get_all("alice") if r.id in (a, b, c)] == ["alice flies on Tuesday"]
    assert "give the ids" in cli(url, "delete-many", "-u", "alice", code=2).stderr
