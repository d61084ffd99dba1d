"""Issue 57: `connect(url, milvus_uri=...)` trusted whatever answered /healthz and wrote into the store
that service held, though the caller named another. The service now answers, to a caller's nonce, a
keyed fingerprint of its store (contract/store_identity.py), and connect refuses another store with a
ConfigError before sending anything but the health check. A real uvicorn on loopback."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

import hippocampus
from hippocampus import Memory
from hippocampus.contract import store_identity
from hippocampus.errors import ConfigError
from hippocampus.server import KeyRing, create_app
from tests.service_support import served


@pytest.fixture
def service(shared_db: Path, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"cs_{uuid.uuid4().hex[:10]}", embedder=embedder)
    app = create_app(memory, KeyRing.load(env={}), mcp=False, ui=False, close_memory=False)
    paths: list[str] = []

    async def recording(scope, receive, send):  # every path the service is asked
        if scope["type"] == "http":
            paths.append(scope["path"])
        await app(scope, receive, send)

    try:
        with served(recording) as url:
            yield url, memory, paths
    finally:
        memory.close()


def test_connect_refuses_a_service_holding_another_store(service, tmp_path: Path):
    url, memory, paths = service
    with pytest.raises(ConfigError, match="holds another store") as caught:
        hippocampus.connect(url, milvus_uri=str(tmp_path / "b.db"), start=False)
    assert str(tmp_path) not in str(caught.value).replace(repr(str(tmp_path / "b.db")), "")  # names only the caller's own
    assert set(paths) == {"/healthz"} and memory.get_all(user_id="alice") == []
    assert not (tmp_path / "b.db").exists()


def test_connect_takes_the_service_holding_the_store_named(service, shared_db: Path, tmp_path: Path):
    url, memory, paths = service
    link = tmp_path / "same.db"
    os.symlink(shared_db, link)  # another spelling of the same store
    for uri in (str(shared_db), str(link)):
        with hippocampus.connect(url, milvus_uri=uri, start=False) as client:
            client.add("I live in Lisbon", user_id="alice", chat_id="c1")
    assert len(memory.get_all(user_id="alice")) == 2


def test_the_health_answer_never_names_the_store(service, shared_db: Path):
    import httpx

    url, _, _ = service
    plain = httpx.get(url + "/healthz")
    assert plain.json() == {"status": "ok"} and store_identity.STORE_HEADER.lower() not in plain.headers
    asked = httpx.get(url + "/healthz", headers={store_identity.STORE_HEADER: "n1"})
    held = asked.headers[store_identity.STORE_HEADER]
    assert str(shared_db) not in held and held == store_identity.fingerprint(str(shared_db), "n1")
    assert held != httpx.get(url + "/healthz", headers={store_identity.STORE_HEADER: "n2"}).headers[store_identity.STORE_HEADER]


def test_the_async_client_asks_which_store_as_the_client_does(service, shared_db: Path, tmp_path: Path):
    """AsyncClient had no holds_store (nor healthy), so async code could not check the store before sending."""
    import asyncio

    from hippocampus import AsyncClient

    url, _, paths = service

    async def ask() -> tuple[bool, bool | None, bool | None]:
        async with AsyncClient(url) as client:
            same, other = await client.holds_store(str(shared_db)), await client.holds_store(str(tmp_path / "b.db"))
            return await client.healthy(), same, other

    healthy, same, other = asyncio.run(ask())
    assert healthy and same is True and other is False and set(paths) == {"/healthz"}

    async def nobody() -> tuple[bool, bool | None]:
        async with AsyncClient("http://127.0.0.1:9") as client:  # nothing listens: neither healthy nor saying
            return await client.healthy(), await client.holds_store(str(shared_db))

    assert asyncio.run(nobody()) == (False, None)
