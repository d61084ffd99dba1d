"""A cap on the texts one request may embed (issue 41): a batch above MAX_EMBED_ITEMS is InvalidInput 422
with a message that says what to do, and nothing of it is stored; one at the cap is stored whole."""

from __future__ import annotations

import uuid

import httpx

from hippocampus import Memory
from hippocampus.server import create_app
from hippocampus.server.rest import MAX_EMBED_ITEMS
from tests.service_support import IN_PROCESS_URL, in_process


def test_a_batch_above_the_cap_is_refused_whole(shared_db, embedder, monkeypatch):
    import hippocampus.server.rest as rest

    monkeypatch.setattr(rest, "MAX_EMBED_ITEMS", 3)  # the rule, at a size a test can afford
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
    finally:
        memory.close()
    assert MAX_EMBED_ITEMS == 1000
