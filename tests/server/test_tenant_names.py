"""Whose work an embedding is (issue 57): a request's tenant reaches the embedder as the key's name
(embeddings/turns.py `current_tenant`), through REST and through MCP's tools, on a real uvicorn service;
the library and a keyless service have one tenant, "". The turns between tenants hang on this name."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from typing import Any

import anyio
import httpx2
import numpy as np
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from hippocampus import Client, Memory
from hippocampus.embeddings.offline import OfflineEmbedder
from hippocampus.embeddings.turns import current_tenant
from hippocampus.server import KeyRing, create_app
from tests.service_support import served

LIMIT_S = 120  # per MCP conversation: a hang fails the test instead of the suite


class _Naming:
    """An Embedder that records, for each text it embeds, whose work the call was."""

    def __init__(self, inner: OfflineEmbedder):
        self.inner, self.model_name = inner, inner.model_name
        self.seen: dict[str, str] = {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str], role: Any = "passage") -> np.ndarray:
        for text in texts:
            self.seen[text] = current_tenant.get()
        return self.inner.encode(texts, role=role)


def test_rest_and_mcp_requests_embed_as_their_keys_tenant(shared_db, embedder) -> None:
    naming = _Naming(embedder)
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"names_{uuid.uuid4().hex[:10]}", embedder=naming)
    memory.add("the library's own add", user_id="carol")
    key_a, key_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{key_a}=alice;{key_b}=bob"})
    a, b = keys.resolve(key_a).name, keys.resolve(key_b).name
    try:
        with served(create_app(memory, keys, ui=False, close_memory=False)) as url:
            with Client(url, api_key=key_a, timeout=LIMIT_S) as client:
                client.add("alice's turn over REST", "alice")
            with Client(url, api_key=key_b, timeout=LIMIT_S) as client:
                client.search("bob's question over REST", "bob")

            async def over_mcp() -> None:
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key_b}"})
                with anyio.fail_after(LIMIT_S):
                    async with http, MCPClient(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:
                        added = await mcp.call_tool("add_memory", {"text": "bob's turn over MCP", "user_id": "bob"})
                        assert not added.is_error

            anyio.run(over_mcp)
    finally:
        memory.close()
    assert a != b
    assert naming.seen["the library's own add"] == ""
    assert naming.seen["alice's turn over REST"] == a
    assert naming.seen["bob's question over REST"] == b
    assert naming.seen["bob's turn over MCP"] == b
