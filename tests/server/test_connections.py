"""Connections bounded before the app (issue 42, items 4 and 10; hippocampus/server/connections.py):
a real uvicorn on a free loopback port with `serve`'s settings (short deadlines, a small cap, for
speed): a half-sent head or a stalled body is closed, connections past the cap are closed at once,
X-Forwarded-For from loopback is not believed (rotating it does not dodge the failed-key throttle),
and a WebSocket upgrade is plain HTTP through the guard. No assertion on speed: each wait has a
generous ceiling and fails only when a connection is never closed."""

from __future__ import annotations

import secrets
import socket
import threading
import time
import uuid

import httpx
import pytest
import uvicorn

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from hippocampus.server.connections import uvicorn_settings
from tests.service_support import START_GUARD_S, free_port

KEY = secrets.token_urlsafe(32)
CAP = 4
CEILING_S = 30.0  # a connection never closed fails the test after this; a closed one returns at once


@pytest.fixture(scope="module")
def server(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"conn_{uuid.uuid4().hex[:10]}", embedder=embedder)
    app = create_app(memory, KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{KEY}=*"}), mcp=False)
    port = free_port()
    settings = uvicorn_settings((), head_timeout_s=1.5, body_timeout_s=1.5, max_connections=CAP)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", **settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_GUARD_S
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield port, app
    server.should_exit = True
    thread.join(timeout=60)


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed this connection (reads until EOF, at most CEILING_S)."""
    sock.settimeout(CEILING_S)
    try:
        while sock.recv(4096):
            pass
        return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=CEILING_S)


def test_a_half_sent_head_is_closed(server) -> None:
    with _connect(server[0]) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert _closed(sock)


def test_a_stalled_body_is_closed(server) -> None:
    with _connect(server[0]) as sock:
        sock.sendall(b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode()
                     + b"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"query\": ")
        assert _closed(sock)


def test_past_the_cap_the_longest_waiting_connection_makes_room(server) -> None:
    """CAP idle connections (a slow-loris holder's), then a client: the oldest idle one is closed and the
    client is answered."""
    held = [_connect(server[0]) for _ in range(CAP)]
    try:
        time.sleep(0.2)  # accepted by the server
        with _connect(server[0]) as client:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            client.settimeout(CEILING_S)
            assert client.recv(64).startswith(b"HTTP/1.1 200")
        assert _closed(held[0])
    finally:
        for sock in held:
            sock.close()


def test_forwarded_for_from_loopback_does_not_dodge_the_throttle(server) -> None:
    server[1].state.auth_throttle._failures.clear()
    url = f"http://127.0.0.1:{server[0]}/v1/stats"
    codes = [httpx.get(url, headers={"Authorization": f"Bearer {secrets.token_urlsafe(32)}",
                                     "X-Forwarded-For": f"203.0.113.{i}"}, timeout=60).status_code for i in range(15)]
    assert codes[-1] == 429
    assert httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60).status_code == 200


def test_a_websocket_upgrade_goes_through_the_guard(server) -> None:
    headers = {"Host": "rebind.attacker.example", "Upgrade": "websocket", "Connection": "Upgrade",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}
    answer = httpx.get(f"http://127.0.0.1:{server[0]}/ui?user=alice", headers=headers, timeout=60)
    assert answer.status_code == 421  # the Host check ran: the upgrade was an ordinary request
