"""`"ts": true` over REST was stored as 1970-01-01 (issue 57): pydantic's lax mode reads true as 1, and
the library (which refuses a bool) saw 1. Every time field of the REST bodies and the MCP tools now
refuses true/false with a clear InvalidInput 422, before any work: nothing is stored."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from mcp import Client as MCPClient
from pydantic import TypeAdapter, ValidationError

from hippocampus.contract import wire
from hippocampus.server import KeyRing, create_app
from hippocampus.server.auth import Tenant
from hippocampus.server.mcp import When, build_server
from tests.service_support import IN_PROCESS_URL, in_process


@pytest.fixture(scope="module")
def http(shared_db, embedder):
    from hippocampus import Memory

    memory = Memory(milvus_uri=str(shared_db), collection_name=f"flag_{uuid.uuid4().hex[:10]}", embedder=embedder)
    app = create_app(memory, KeyRing.load(env={}), mcp=False)
    with in_process(app) as transport:
        with httpx.Client(base_url=IN_PROCESS_URL, transport=transport) as client:
            yield client, memory
    memory.close()


@pytest.mark.parametrize("field", ["ts", "expires_at"])
@pytest.mark.parametrize("flag", [True, False])
def test_add_refuses_a_flag_for_a_time_and_stores_nothing(http, field, flag):
    client, memory = http
    user = f"u-{uuid.uuid4().hex[:6]}"
    answer = client.post("/v1/memories", json={"messages": "I moved to Berlin", "user_id": user, field: flag})
    assert answer.status_code == 422
    assert "InvalidInput" in answer.text
    assert field in answer.text and "not true or false" in answer.text
    assert memory.get_all(user_id=user) == []


def test_observe_and_decay_refuse_a_flag_for_a_time(http):
    client, _memory = http
    observed = client.post("/v1/observe", json={"messages": "user: hi\nassistant: hello", "user_id": "u1", "ts": True})
    assert observed.status_code == 422 and "not true or false" in observed.text
    for model, field in ((wire.ObserveRequest, "ts"), (wire.DecayRequest, "now"), (wire.AddRequest, "ts"),
                         (wire.AddRequest, "expires_at")):
        base = {"messages": "x", "user_id": "u"} if "messages" in model.model_fields else {}
        with pytest.raises(ValidationError, match="not true or false"):
            model.model_validate({**base, field: True})


def test_a_time_is_still_a_number_or_a_date():
    request = wire.AddRequest.model_validate({"messages": "x", "user_id": "u", "ts": 1_700_000_000, "expires_at": "until Monday"})
    assert request.ts == 1_700_000_000 and request.expires_at == "until Monday"
    assert wire.AddRequest.model_validate({"messages": "x", "user_id": "u", "ts": "2024-05-01T10:00:00Z"}).ts.year == 2024
    assert TypeAdapter(When).validate_python("2024-05-01") == "2024-05-01"


def test_mcp_add_memory_refuses_a_flag_for_a_time(memory):
    user = f"u-{uuid.uuid4().hex[:6]}"

    async def call() -> list:
        async with MCPClient(build_server(memory, lambda ctx: Tenant(name="test"))) as client:
            results = []
            for field in ("ts", "expires_at"):
                results.append(await client.call_tool("add_memory", {"text": "I moved to Berlin", "user_id": user, field: True}))
            return results

    for result in asyncio.run(asyncio.wait_for(call(), 60)):
        assert result.is_error and "not true or false" in result.content[0].text
    assert memory.get_all(user_id=user) == []
