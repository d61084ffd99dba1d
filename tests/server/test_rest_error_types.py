"""Every REST error names a documented type (docs/service.md: InvalidInput, NotFound, ...; issue 31, case 15):
a body that is not JSON text (binary, not UTF-8) is InvalidInput 422, never the framework's
"HTTPError"; a query over the size limit is told it is too long, not to split it into memories."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from hippocampus import InvalidInput, Memory
from hippocampus.models import TEXT_MAX_BYTES
from hippocampus.server import create_app
from tests.service_support import IN_PROCESS_URL, in_process

DOCUMENTED = {"InvalidInput", "NotFound", "ConfigError", "AuthError", "StoreError", "LLMError", "Forbidden", "MethodNotAllowed"}
BODIES = {
    "every byte": bytes(range(256)),
    "not UTF-8 inside JSON": b'{"query": "\xff\xfe", "user_id": "u"}',
    "a lone continuation byte": b'{"query": "caf\x80", "user_id": "u"}',
    "a PNG header": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
}


@pytest.fixture(scope="module")
def http(shared_db, embedder) -> Iterator[httpx.Client]:
    """The app in-process (no socket is needed to read a body)."""
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"errt_{uuid.uuid4().hex[:10]}", embedder=embedder)
    with in_process(create_app(memory, mcp=False, ui=False, close_memory=False)) as transport, httpx.Client(
            base_url=IN_PROCESS_URL, transport=transport, timeout=30) as client:
        yield client
    memory.close()


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("route", ["/v1/search", "/v1/memories"])
def test_a_binary_body_is_invalid_input(http, route, name):
    r = http.post(route, content=BODIES[name], headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["type"] == "InvalidInput" and error["type"] in DOCUMENTED and "\n" not in error["message"]


def test_a_too_long_query_is_told_so(http, memory):
    query = "word " * (TEXT_MAX_BYTES // 5 + 1)
    r = http.post("/v1/search", json={"query": query, "user_id": "u"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidInput"
    assert "too long" in r.json()["error"]["message"] and "several memories" not in r.json()["error"]["message"]
    with pytest.raises(InvalidInput, match="too long") as caught:
        memory.search(query, user_id="u")
    assert "several memories" not in str(caught.value)
    with pytest.raises(InvalidInput, match="several memories"):  # memory text keeps its advice
        memory.add(query, user_id="u")
