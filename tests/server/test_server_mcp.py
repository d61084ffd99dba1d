"""MCP with the SDK's own client over both transports: stdio (`hippocampus mcp` in a subprocess on a
temporary store) and streamable HTTP (`create_app` under uvicorn on a free loopback port).

Each lists the eleven tools with their schemas and round-trips add / search / delete; over HTTP a key
bound to alice cannot reach bob's memory (the same words as a missing one) and a missing or unknown
key is refused with 401 before MCP sees the request."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from hippocampus import Memory
from hippocampus.server.app import create_app
from hippocampus.server.auth import KeyRing, _entry

TOOLS = {"add_memory", "search_memory", "list_memories", "get_memory", "update_memory", "delete_memory",
         "update_memories", "delete_memories", "memory_history", "memory_context", "observe_turn"}
ALICE_KEY, OPERATOR_KEY = "alice-KiVml04s0bz8VhPmWqrYgEzwzbYUSXVK", "operator-uPftMi7pTuaY_qYXyH0bopOFRLF1vWb8"
LIMIT_S = 60  # per MCP conversation: a hang fails the test instead of the suite


def _text(result: Any) -> str:
    return result.content[0].text


async def _check_tools(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
    assert tools["get_memory"].input_schema["required"] == ["memory_id", "user_id"]
    assert tools["get_memory"].input_schema["properties"]["memory_id"]["type"] == "integer"
    assert tools["search_memory"].annotations.read_only_hint and tools["delete_memory"].annotations.destructive_hint


async def _round_trip(client: Client, user: str) -> None:
    """add -> search finds it -> delete -> get is NotFound (and the session goes on after errors)."""
    added = await client.call_tool("add_memory", {"text": "I moved to Berlin in May", "user_id": user, "chat_id": "c1"})
    assert not added.is_error, _text(added)
    (memory_id,) = added.structured_content["ids"]
    found = await client.call_tool("search_memory", {"query": "where do I live now?", "user_id": user})
    hit = next(h for h in found.structured_content["memories"] if h["id"] == memory_id)
    assert hit["text"] == "I moved to Berlin in May" and hit["memory_type"] == "episodic"
    assert set(hit) == {"id", "text", "score", "memory_type", "time", "found_by"} and "dense" in hit["found_by"]
    seen = await client.call_tool("observe_turn", {"exchange": "user: where do I live?\nassistant: In Berlin, since May.",
                                                    "user_id": user, "shown": [memory_id]})
    assert not seen.is_error and seen.structured_content["used"] == [memory_id], _text(seen)
    page = await client.call_tool("list_memories", {"user_id": user})
    assert {item["id"]: item["chat_id"] for item in page.structured_content["items"]}[memory_id] == "c1"
    deleted = await client.call_tool("delete_memory", {"memory_id": memory_id, "user_id": user})
    assert deleted.structured_content == {"deleted": memory_id}
    gone = await client.call_tool("get_memory", {"memory_id": memory_id, "user_id": user})
    assert gone.is_error and _text(gone) == f"NotFound: memory {memory_id} not found for this user"
    bad = await client.call_tool("get_memory", {"memory_id": "not a number", "user_id": user})
    assert bad.is_error and "Traceback" not in _text(bad)
    events = await client.call_tool("memory_history", {"memory_id": memory_id, "user_id": user})
    assert [e["action"] for e in events.structured_content["events"]] == ["created", "hit", "deleted"]


# ---------------------------------------------------------------------- stdio
def _stdio(tmp_path: Path, *args: str, **env: str) -> StdioServerParameters:
    """`hippocampus <args>` as a subprocess (through cli.app.main, whatever the install left on PATH)."""
    return StdioServerParameters(
        command=sys.executable, args=["-c", "from hippocampus.cli.app import main; main()", *args],
        env={"HIPPOCAMPUS_HOME": str(tmp_path), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **env},
    )


def test_stdio_round_trip_and_user_restriction(tmp_path: Path, embedder: Any) -> None:
    with Memory(milvus_uri=str(tmp_path / "stdio.db"), embedder=embedder) as memory:  # alice's graph, built before
        memory.add_many([{"text": t, "user_id": "alice"} for t in ("Anna works at Siemens", "I met Anna at the climbing gym")])
        memory.build_graph("alice")
    params = _stdio(tmp_path, "--uri", str(tmp_path / "stdio.db"), "mcp", "-u", "alice")

    async def talk() -> None:
        with anyio.fail_after(LIMIT_S):
            async with Client(params) as client:
                await _check_tools(client)
                await _round_trip(client, "alice")
                joined = await client.call_tool("search_memory", {"query": "Where does Anna work?", "user_id": "alice", "graph": True})
                paths = {p for h in joined.structured_content["memories"] for p in h["found_by"]}
                assert any(p.startswith("graph_") for p in paths), joined.structured_content
                other = await client.call_tool("get_memory", {"memory_id": 1, "user_id": "bob"})  # not in --user
                assert other.is_error and _text(other) == "NotFound: memory 1 not found for this user"

    anyio.run(talk)


# ---------------------------------------------------------------------- streamable HTTP
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[str]:
    """A real service with two keys (alice's, the operator's); yields its MCP URL."""
    import uvicorn

    memory = Memory(milvus_uri=str(tmp_path_factory.mktemp("mcp") / "http.db"), embedder=embedder)
    keys = KeyRing([_entry(ALICE_KEY, ["alice"], "alice"), _entry(OPERATOR_KEY, "*", "operator")])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(memory, keys), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(15)


def _session(url: str, key: str, header: str = "Authorization") -> tuple[Any, Client]:
    """An http client carrying the key, and an MCP Client over it (enter both, http first)."""
    http = httpx2.AsyncClient(headers={header: f"Bearer {key}" if header == "Authorization" else key})
    return http, Client(streamable_http_client(url, http_client=http))


def test_http_round_trip(service: str) -> None:
    async def talk() -> None:
        http, client = _session(service, OPERATOR_KEY)
        with anyio.fail_after(LIMIT_S):
            async with http, client:
                await _check_tools(client)
                await _round_trip(client, "carol")

    anyio.run(talk)
    metrics = httpx.get(service.removesuffix("/mcp") + "/metrics", headers={"Authorization": f"Bearer {OPERATOR_KEY}"}).text
    assert 'hippocampus_requests_total{endpoint="add_memory",method="MCP",status="200"} 1.0' in metrics
    assert 'hippocampus_errors_total{endpoint="get_memory",method="MCP",type="NotFound"}' in metrics  # tool calls counted too


def test_http_tenant_key_cannot_reach_another_user(service: str) -> None:
    async def talk() -> None:
        http, operator = _session(service, OPERATOR_KEY)
        http_a, alice = _session(service, ALICE_KEY, header="X-API-Key")
        with anyio.fail_after(LIMIT_S):
            async with http, operator, http_a, alice:
                added = await operator.call_tool("add_memory", {"text": "bob's locker code is 4711", "user_id": "bob"})
                (bob_id,) = added.structured_content["ids"]
                missing = await operator.call_tool("get_memory", {"memory_id": bob_id, "user_id": "dave"})
                for tool in ("get_memory", "delete_memory", "update_memory"):
                    args = {"memory_id": bob_id, "user_id": "bob", **({"text": "x"} if tool == "update_memory" else {})}
                    refused = await alice.call_tool(tool, args)
                    assert refused.is_error and _text(refused) == _text(missing)  # word for word a missing memory
                searched = await alice.call_tool("search_memory", {"query": "locker code", "user_id": "bob"})
                assert searched.is_error and "4711" not in _text(searched)
                still = await operator.call_tool("get_memory", {"memory_id": bob_id, "user_id": "bob"})
                assert still.structured_content["text"] == "bob's locker code is 4711"
                own = await alice.call_tool("add_memory", {"text": "alice keeps her own", "user_id": "alice"})
                assert not own.is_error

    anyio.run(talk)


def test_http_refuses_missing_and_unknown_keys(service: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer not-a-key-at-all-0000"}, {"X-API-Key": "not-a-key-at-all-0000"}):
        answer = httpx.post(service, json=ping, headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "AuthError"
    assert httpx.get(service, headers={"X-API-Key": ALICE_KEY}).status_code == 405  # stateless: no stream to hold

    async def talk() -> None:
        http, client = _session(service, "not-a-key-at-all-0000")
        with anyio.fail_after(LIMIT_S):
            async with http:
                with pytest.raises(Exception):  # the SDK reports the 401 while connecting
                    async with client:
                        pass

    anyio.run(talk)


def test_open_server_refuses_foreign_host(tmp_path: Path, embedder: Any) -> None:
    """Without keys a server is loopback-only; its MCP endpoint also refuses a rebound DNS name."""
    from starlette.testclient import TestClient

    app = create_app(Memory(milvus_uri=str(tmp_path / "open.db"), embedder=embedder), KeyRing())
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with TestClient(app, base_url="http://127.0.0.1:8765") as http:
        assert http.post("/mcp", json=body, headers=accept).status_code == 200
        assert http.post("/mcp", json=body, headers={**accept, "Host": "evil.example"}).status_code in (400, 403, 421)


def test_stdio_over_a_running_service(service: str, tmp_path: Path) -> None:
    """`hippocampus --server URL mcp`: the tools call the service through hippocampus.Client, whose key
    (alice's) the service enforces: bob's memory is still answered like a missing one."""
    params = _stdio(tmp_path, "--server", service.removesuffix("/mcp"), "mcp", HIPPOCAMPUS_API_KEY=ALICE_KEY)

    async def talk() -> None:
        with anyio.fail_after(LIMIT_S):
            async with Client(params) as client:
                await _round_trip(client, "alice")
                other = await client.call_tool("get_memory", {"memory_id": 1, "user_id": "bob"})
                assert other.is_error and _text(other) == "NotFound: memory 1 not found for this user"

    anyio.run(talk)
