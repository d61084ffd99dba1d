"""What the service writes about itself and on disk (issue 42, item 10): an error's log line names the
route template and the failure's kind, never the raw /ui/users/<id>/ path, the query string or a stored
value; a real `hippocampus serve` creates every file 0600 and folder 0700 (umask at start), milvus-lite's
own files included; a keys file with clear keys that others can read is warned about."""

from __future__ import annotations

import logging
import os
import secrets
import stat
import uuid
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from tests.service_support import ServiceProcess, free_port

OPERATOR = secrets.token_urlsafe(32)


def test_an_unexpected_error_is_logged_by_route_template_without_ids_or_values(shared_db, embedder, caplog, monkeypatch) -> None:
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"logs_{uuid.uuid4().hex[:10]}", embedder=embedder)
    user = "zelda-private-7f3a"
    memory.add("my locker code is 4321", user_id=user, infer=False)
    app = create_app(memory, KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{OPERATOR}=*"}), mcp=False)

    def unexpected(*args, **kwargs):  # a bug deep down, its message full of what the request held
        raise RuntimeError(f"unexpected: {user} needle-text secretkind 4321")

    with caplog.at_level(logging.DEBUG, logger="hippocampus"):
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            for name in ("query", "iterate", "search_dense", "search_bm25", "search_hybrid", "search_exact"):
                monkeypatch.setattr(memory.store, name, unexpected)  # after start-up: every read now fails
            head = {"X-API-Key": OPERATOR}
            assert client.get(f"/ui/users/{user}/memories?q=needle-text", headers=head).status_code == 500
            assert client.get("/v1/memories", params={"user_id": user, "filters": '{"who": {"ne": "needle-text"}}'},
                              headers=head).status_code == 500
    errors = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "/ui/users/{user_id}/memories" in errors and "/v1/memories" in errors
    for secret in (user, "needle-text", "secretkind", "4321"):
        assert secret not in errors
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING]


def test_serve_creates_its_files_private(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    db = store / "memories.db"
    service = ServiceProcess(str(db), free_port(), tmp_path / "serve.log")
    try:
        for i in range(3):
            assert httpx.post(service.url + "/v1/memories", json={"messages": f"note {i}", "user_id": "u"},
                              timeout=120).status_code == 200
        httpx.post(service.url + "/v1/consolidate", json={}, timeout=120)
        status = Path(f"/proc/{service.proc.pid}/status")
        if status.exists():  # Linux: whatever milvus-lite or the service creates later is private too
            assert "Umask:\t0077" in status.read_text()
    finally:
        service.stop()
    loose = [f"{p.relative_to(tmp_path)} {stat.S_IMODE(p.stat().st_mode):o}" for p in store.rglob("*")
             if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert loose == []


def test_a_readable_keys_file_with_clear_keys_is_warned_about(tmp_path: Path, caplog) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(f"keys:\n  - key: {secrets.token_urlsafe(32)}\n    users: [alice]\n", encoding="utf-8")
    os.chmod(path, 0o644)
    with caplog.at_level(logging.WARNING, logger="hippocampus.server"):
        KeyRing.load(path, env={})
    assert "readable by other users (mode 644)" in caplog.text
    caplog.clear()
    os.chmod(path, 0o600)
    with caplog.at_level(logging.WARNING, logger="hippocampus.server"):
        KeyRing.load(path, env={})
    assert caplog.text == ""
