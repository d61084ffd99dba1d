"""Issue 57: rotating a key ends its Web UI sessions. Sessions were matched to the keys in force by
their tenant (name, users, agents), so a key replaced by a new one under the same name and users kept
every session it had opened: a reload said "0 Web UI session(s) of removed keys ended" and the old
key's session still wrote memories. A session is now bound to the fingerprint (SHA-256) of the key
that opened it. In-process (the app's ASGI transport), the reload called as SIGHUP's thread calls it."""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import uuid
from pathlib import Path

import httpx
import pytest

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from hippocampus.server.key_reload import reload_keys
from tests.service_support import IN_PROCESS_URL, app_http


def _write_keys(path: Path, *keys: str) -> None:
    """Every key under one name, one user: the same tenant (only their digests are written)."""
    lines = [f'  - {{"name": "alice-ui", "sha256": "{hashlib.sha256(k.encode()).hexdigest()}", "users": ["alice"]}}'
             for k in keys]
    path.write_text("keys:\n" + "\n".join(lines) + "\n", encoding="utf-8")


def _login(http: httpx.Client, key: str, bind: str) -> dict[str, str]:
    answer = http.post("/ui/login", data={"key": key, "bind": bind}, headers={"Origin": IN_PROCESS_URL})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui", answer.text[:300]
    http.cookies.clear()  # one client, several browsers: each sends its own cookie by hand
    return {"Cookie": answer.headers["set-cookie"].split(";")[0]}


def _write(http: httpx.Client, cookie: dict[str, str], bind: str, text: str) -> httpx.Response:
    """A UI write as the browser sends it: the form's token from the page, the session's binding."""
    page = http.get("/ui/users/alice/memories", headers=cookie)
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    csrf = match.group(1) if match else ""
    return http.post("/ui/users/alice/memories", data={"text": text, "csrf": csrf, "bind": bind},
                     headers={"Origin": IN_PROCESS_URL, **cookie})


@pytest.fixture
def served(tmp_path: Path, shared_db, embedder):
    keys_file = tmp_path / "keys.yaml"
    old_key = secrets.token_urlsafe(32)
    _write_keys(keys_file, old_key)
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"rot_{uuid.uuid4().hex[:10]}", embedder=embedder)
    app = create_app(memory, KeyRing.load(keys_file, env={}), mcp=False, close_memory=False)
    try:
        with app_http(app) as http:
            yield app, http, memory, keys_file, old_key
    finally:
        memory.close()


def _texts(memory: Memory) -> list[str]:
    return sorted(m.text for m in memory.get_all(user_id="alice"))


def test_a_rotated_key_ends_its_sessions_though_its_tenant_is_the_same(served, caplog):
    app, http, memory, keys_file, old_key = served
    old = _login(http, old_key, "old-browser")
    assert _write(http, old, "old-browser", "written before the rotation").status_code == 303

    new_key = secrets.token_urlsafe(32)
    _write_keys(keys_file, old_key, new_key)  # `keys new` under the same name: both in force for now
    assert reload_keys(app.state)
    assert app.state.keys.resolve(new_key) == app.state.keys.resolve(old_key)  # one tenant, two keys
    new = _login(http, new_key, "new-browser")
    assert http.get("/ui/users/alice/memories", headers=old).status_code == 200  # the old key is still in force

    _write_keys(keys_file, new_key)  # the old key's line removed
    with caplog.at_level(logging.INFO, logger="hippocampus.server"):
        assert reload_keys(app.state)
    assert "1 Web UI session(s) of removed keys ended" in caplog.text

    refused = _write(http, old, "old-browser", "written with the rotated key")
    assert refused.status_code == 401  # a UI post with no live session and no key (guard.py)
    page = http.get("/ui/users/alice/memories", headers=old)
    assert page.status_code == 303 and page.headers["location"] == "/ui/login"
    assert http.get("/v1/memories", params={"user_id": "alice"}, headers={"Authorization": f"Bearer {old_key}"}).status_code == 401

    assert _write(http, new, "new-browser", "written with the new key").status_code == 303
    assert _texts(memory) == ["written before the rotation", "written with the new key"]


def test_a_session_whose_key_left_is_refused_even_if_the_reload_missed_it(served):
    """The check on every request, beside the reload's sweep: a login that raced the reload (resolved
    with the old keys, its session opened after the sweep) still ends at its next request."""
    app, http, memory, keys_file, old_key = served
    old = _login(http, old_key, "old-browser")
    new_key = secrets.token_urlsafe(32)
    _write_keys(keys_file, new_key)
    app.state.keys.replace(KeyRing.load(keys_file, env={}))  # the swap alone, no sweep of the sessions
    assert len(app.state.ui_sessions) == 1
    refused = _write(http, old, "old-browser", "written with the rotated key")
    assert refused.status_code == 401  # a UI post with no live session and no key (guard.py)
    assert len(app.state.ui_sessions) == 0 and _texts(memory) == []
