"""A cap on the texts one request may embed (issue 41): a batch above wire.MAX_ADD_MANY is InvalidInput 422
with a message that says what to do, and nothing of it is stored; one at the cap is stored whole. The Client
sends a larger batch as several requests, so a caller never meets the cap."""

from __future__ import annotations

import uuid

import httpx

from hippocampus import Client, Memory
from hippocampus.contract import wire
from hippocampus.server import create_app
from tests.service_support import IN_PROCESS_URL, in_process


def test_a_batch_above_the_cap_is_refused_whole(shared_db, embedder, monkeypatch):
    monkeypatch.setattr(wire, "MAX_ADD_MANY", 3)  # the rule, at a size a test can afford
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"cap_{uuid.uuid4().hex[:10]}", embedder=embedder)
    try:
        with in_process(create_app(memory, mcp=False, ui=False, close_memory=False)) as transport, httpx.Client(
                base_url=IN_PROCESS_URL, transport=transport, timeout=60) as http:
            items = [{"text": f"note {i}: bought apples", "user_id": "u"} for i in range(4)]
            r = http.post("/v1/memories/batch", json={"items": items})
            assert r.status_code == 422, r.text
            error = r.json()["error"]
            assert error["type"] == "InvalidInput" and "at most 3 items" in error["message"] and "several requests" in error["message"]
            assert memory.store.count("") == 0
            r = http.post("/v1/memories/batch", json={"items": items[:3]})
            assert r.status_code == 200 and len(r.json()["ids"]) == 3
            with Client(IN_PROCESS_URL, transport=transport) as client:  # seven items: requests of 3, 3 and 1, the ids in input order
                more = [{"text": f"note {i}: bought pears", "user_id": "v"} for i in range(7)]
                ids = client.add_many(more)
                assert [client.get(i, "v").text for i in ids] == [m["text"] for m in more]
    finally:
        memory.close()


def test_the_cap_is_one_number():
    """The request model, the service's check and the Client's split read wire.MAX_ADD_MANY (it was 20,000 in
    the request model and 1,000 in the service's check)."""
    from hippocampus.server import rest

    assert wire.MAX_ADD_MANY == 1000 and not hasattr(rest, "MAX_EMBED_ITEMS")
