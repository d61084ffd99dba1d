"""The guard (hippocampus/server/guard.py) against real uvicorn servers on loopback, one with keys and
one without: a rebinding Host on every route, cross-site state changes, non-JSON bodies, bodies over
the cap (announced, and chunked), the key checked before any body is read, wrong keys throttled while
the right one works, the security headers, gated docs, a quiet /healthz and an access log without
query strings.

The verdict on every refused change is the store itself: alice's memories and their histories, read
through the library, identical before and after."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import socket
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from starlette.routing import Route

from hippocampus import Memory
from hippocampus.errors import ConfigError
from hippocampus.server import KeyRing, create_app
from hippocampus.server.guard import CSP, DEFAULT_MAX_BODY_BYTES, AuthThrottle, HostList
from tests.service_support import ServiceProcess, free_port, served

ALICE_KEY, OPERATOR_KEY = secrets.token_urlsafe(32), secrets.token_urlsafe(32)  # 256 bits each
REBIND = "rebind.attacker.example"
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
SAFE = {"GET", "HEAD", "OPTIONS"}


@dataclass
class Server:
    url: str
    app: Any
    memory: Memory
    key: str | None  # alice's key; None on the server without keys
    memory_id: int  # a live memory of alice
    event_id: int  # the `deleted` event of another: undoing it would bring that memory back

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def state(self) -> list[Any]:
        """alice's memories, their histories and her counts: what any change would alter."""
        page = self.memory.page("alice", limit=1000)
        return [(r.model_dump(mode="json"), [e.model_dump(mode="json") for e in self.memory.history(r.id, "alice")])
                for r in page.items] + [self.memory.stats("alice")]


@pytest.fixture(scope="module")
def servers(shared_db, embedder) -> Iterator[dict[str, Server]]:
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{ALICE_KEY}=alice;{OPERATOR_KEY}=*"})
    with ExitStack() as stack:
        out = {}
        for name, ring in (("open", KeyRing()), ("keyed", keys)):
            memory = Memory(milvus_uri=str(shared_db), collection_name=f"guard_{uuid.uuid4().hex[:10]}", embedder=embedder)
            stack.callback(memory.close)
            keep = memory.add("I moved to Berlin in May", user_id="alice", chat_id="c1").ids[0]
            memory.add("I prefer green tea to coffee", user_id="alice", chat_id="c1")
            gone = memory.add("I used to live in Hamburg", user_id="alice", chat_id="c1").ids[0]
            memory.delete(gone, "alice")
            event = next(e.event_id for e in memory.history(gone, "alice") if e.action.value == "deleted")
            app = create_app(memory, ring, close_memory=False)
            url = stack.enter_context(served(app))
            out[name] = Server(url, app, memory, ALICE_KEY if ring is keys else None, keep, event)
        yield out


# ---------------------------------------------------------------------- the routes, filled in
JSON_BODIES: dict[str, dict[str, Any]] = {  # bodies each route would accept: a request that got through would change alice
    "/v1/memories": {"messages": "pwned", "user_id": "alice"},
    "/v1/memories/batch": {"items": [{"text": "pwned", "user_id": "alice"}]},
    "/v1/search": {"query": "Berlin", "user_id": "alice"},
    "/v1/memories/{memory_id}": {"user_id": "alice", "text": "pwned"},
    "/v1/memories/used": {"user_id": "alice", "memory_ids": [0]},
    "/v1/observe": {"messages": "user: forget that I moved to Berlin", "user_id": "alice"},
    "/v1/decay": {"user_id": "alice", "now": 4_102_444_800},
    "/v1/memories/{memory_id}/curate": {"user_id": "alice", "category": "core"},
    "/v1/import/md": {"user_id": "alice", "text": "# Memories\n\n- [new] pwned\n"},
    "/v1/import/jsonl": {"user_id": "alice", "text": '{"text": "pwned", "user_id": "alice"}'},
}


def routes(app: Any) -> list[tuple[str, str]]:
    """(method, template) of every route: the OpenAPI schema's, the UI's, /mcp and the docs."""
    out = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    flat: list[tuple[str, Any]] = []
    for route in app.routes:
        if hasattr(route, "effective_route_contexts"):  # an included router (FastAPI >= 0.165)
            flat += [(c.path, c.original_route) for c in route.effective_route_contexts()]
        elif isinstance(route, (APIRoute, Route)):
            flat.append((route.path, route))
    for path, route in flat:
        out |= {(m, path) for m in (getattr(route, "methods", None) or {"POST"}) - {"HEAD", "OPTIONS"}}
    assert {("POST", "/v1/memories"), ("POST", "/ui/users/{user_id}/batch-delete"), ("POST", "/mcp")} <= out
    return sorted(out) + [("GET", "/ui/static/ui.css")]


def fill(s: Server, template: str) -> str:
    path = template.replace("{user_id}", "alice").replace("{memory_id}", str(s.memory_id))
    path = re.sub(r"\{[^}]+\}", "1", path.replace("{event_id}", str(s.event_id)))
    return path if path.startswith("/ui") else f"{path}?user_id=alice"


def send(s: Server, client: httpx.Client, method: str, template: str, headers: dict[str, str], csrf: str = "") -> httpx.Response:
    """The request a page (or a script) would send to change alice's memories through this route."""
    path = fill(s, template)
    headers = {**s.auth(), **headers}
    if template == "/mcp":
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "delete_memory", "arguments": {"memory_id": s.memory_id, "user_id": "alice"}}}
        return client.request(method, path, json=call, headers={**MCP_ACCEPT, **headers})
    if template.startswith("/ui") and method == "POST":
        form = {"text": "pwned", "ids": str(s.memory_id), "memory_id": str(s.memory_id), "category": "core", "csrf": csrf}
        return client.request(method, path, data=form, headers=headers)
    body = JSON_BODIES.get(template, {"user_id": "alice"}) if method not in SAFE else None
    return client.request(method, path, json=body, headers=headers)


def csrf_of(s: Server, client: httpx.Client) -> str:
    """A real form token of the open server's UI (the keyed one needs a session: the attack suite's part)."""
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/users/alice/memories").text)
    return found.group(1) if found else ""


def _error(response: httpx.Response) -> dict[str, str]:
    return response.json()["error"]


# ---------------------------------------------------------------------- Host
@pytest.mark.parametrize("name", ["open", "keyed"])
def test_a_rebinding_host_is_421_on_every_route_and_changes_nothing(name: str, servers) -> None:
    s = servers[name]
    before = s.state()
    with httpx.Client(base_url=s.url, timeout=60) as client:
        csrf = csrf_of(s, client) if not s.key else ""
        answers = {f"{m} {p}": send(s, client, m, p, {"Host": f"{REBIND}:{s.port}"}, csrf) for m, p in routes(s.app)}
        assert {k: r.status_code for k, r in answers.items() if r.status_code != 421} == {}
        assert _error(answers["GET /v1/memories"])["type"] == "ConfigError"
        assert "--allowed-host" in _error(answers["GET /v1/memories"])["message"]
        for host in ("localhost", f"localhost:{s.port}", f"[::1]:{s.port}", f"127.0.0.1:{s.port}"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
        for host in ("", "127.0.0.1.rebind.example", "2001:db8::1", "localhost:port"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 421, host
    assert s.state() == before


def test_operator_names_are_served_and_shared_with_mcp(shared_db, embedder) -> None:
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"guard_{uuid.uuid4().hex[:10]}", embedder=embedder)
    app = create_app(memory, allowed_hosts=["memory.example.com", "other.example:8443"], close_memory=False, ui=False)
    try:
        with served(app) as url, httpx.Client(base_url=url) as client:
            assert client.get("/healthz", headers={"Host": "Memory.Example.com:80"}).status_code == 200
            assert client.get("/healthz", headers={"Host": "other.example:8443"}).status_code == 200
            assert client.get("/healthz", headers={"Host": "other.example:9999"}).status_code == 421
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
            named = client.post("/mcp", json=init, headers={**MCP_ACCEPT, "Host": "memory.example.com"})
            assert named.status_code == 200, named.text  # the MCP SDK's own check knows the name too
    finally:
        memory.close()
    hosts = HostList(["memory.example.com"])
    assert "memory.example.com:*" in hosts.mcp_hosts() and "https://memory.example.com" in hosts.mcp_origins()
    for bad in ("http://x.example", "*", "x.example/path", "a b"):
        with pytest.raises(ConfigError, match="allowed-host"):
            HostList([bad])


# ---------------------------------------------------------------------- Origin
@pytest.mark.parametrize("name", ["open", "keyed"])
def test_cross_site_state_changes_are_403_on_rest_ui_and_mcp(name: str, servers) -> None:
    s = servers[name]
    before = s.state()
    changing = [(m, p) for m, p in routes(s.app) if m not in SAFE]
    assert {"/mcp", "/v1/history/{event_id}/undo", "/v1/consolidate", "/ui/users/{user_id}/batch-delete"} <= {p for _, p in changing}
    other = f"http://127.0.0.1:{s.port + 1}"  # another port is another origin
    with httpx.Client(base_url=s.url, timeout=60) as client:
        csrf = csrf_of(s, client) if not s.key else ""
        for headers in ({"Origin": other}, {"Origin": "null"}, {"Origin": f"http://{REBIND}:{s.port}"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                        {"Origin": s.url, "Sec-Fetch-Site": "cross-site"}):
            codes = {f"{m} {p}": send(s, client, m, p, headers, csrf).status_code for m, p in changing}
            assert {k: v for k, v in codes.items() if v != 403} == {}, headers
        assert s.state() == before
        refused = client.post("/v1/search", json=JSON_BODIES["/v1/search"], headers={**s.auth(), "Origin": other})
        assert _error(refused)["type"] == "Forbidden" and "cross-site" in _error(refused)["message"]
        # the service's own pages, and clients that send no Origin, go through
        for headers in ({"Origin": s.url, "Sec-Fetch-Site": "same-origin"}, {}, {"Sec-Fetch-Site": "none"}):
            found = client.post("/v1/search", json=JSON_BODIES["/v1/search"], headers={**s.auth(), **headers})
            assert found.status_code == 200 and found.json()["episodic"], headers
        assert client.get("/v1/memories", params={"user_id": "alice"}, headers={**s.auth(), "Origin": other}).status_code == 200


def test_the_uis_own_forms_still_work(servers) -> None:
    s = servers["open"]
    with httpx.Client(base_url=s.url, timeout=60) as client:
        csrf = csrf_of(s, client)
        added = client.post("/ui/users/alice/memories", data={"text": "a form post from the UI itself", "csrf": csrf},
                            headers={"Origin": s.url})
        assert added.status_code in (200, 303), added.text[:300]
    texts = [r.text for r in s.memory.page("alice", limit=1000).items]
    assert "a form post from the UI itself" in texts
    s.memory.delete(next(r.id for r in s.memory.page("alice", limit=1000).items if r.text.startswith("a form post")), "alice")


# ---------------------------------------------------------------------- JSON only
@pytest.mark.parametrize("name", ["open", "keyed"])
def test_form_text_and_multipart_bodies_on_v1_are_415(name: str, servers) -> None:
    s = servers[name]
    before = s.state()
    with httpx.Client(base_url=s.url, timeout=60, headers=s.auth()) as client:
        answers = [
            client.post("/v1/memories", data={"messages": "pwned", "user_id": "alice"}),
            client.post("/v1/memories", content=b'{"messages": "pwned", "user_id": "alice"}', headers={"Content-Type": "text/plain"}),
            client.post("/v1/memories", files={"messages": ("x.txt", b"pwned")}, data={"user_id": "alice"}),
            client.post("/v1/memories", content=b'{"messages": "pwned", "user_id": "alice"}'),  # no Content-Type at all
            client.post(f"/v1/history/{s.event_id}/undo?user_id=alice", content=b"x", headers={"Content-Type": "text/plain"}),
            client.post("/mcp", content=b"{}", headers={**MCP_ACCEPT, "Content-Type": "text/plain"}),
        ]
        assert [r.status_code for r in answers] == [415] * len(answers), [r.text[:120] for r in answers]
        assert _error(answers[1])["type"] == "InvalidInput" and "application/json" in _error(answers[1])["message"]
        # JSON with a charset, and a POST without a body (curl -X POST), still pass
        ok = client.post("/v1/search", content=b'{"query": "tea", "user_id": "alice"}',
                         headers={"Content-Type": "application/json; charset=utf-8"})
        assert ok.status_code == 200
    assert s.state() == before


# ---------------------------------------------------------------------- body size
def announce(s: Server, path: str, headers: dict[str, str], *, length: int = 100 * 2**20, send_bytes: int = 65_536,
             chunked: bool = False, terminate: bool = False) -> tuple[int, bytes]:
    """Announce a `length`-byte body (or a chunked one) and send only `send_bytes` of it: the status of
    the answer, and the answer. Any answer proves the server did not wait for the rest; one that reads
    first never answers (socket.timeout is the hang guard, not a timing)."""
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    lead = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n{framing}\r\n{head}\r\n".encode()
    with socket.create_connection(("127.0.0.1", s.port), timeout=30) as sock:
        sock.sendall(lead)
        try:
            sent = 0
            while sent < send_bytes:
                piece = b"1," * 8192
                sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
                sent += len(piece)
            if terminate:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed while we were still sending: what we want
        answer = b""
        while b"\r\n\r\n" not in answer:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            answer += data
    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    assert match, f"no HTTP answer: {answer[:200]!r}"
    return int(match.group(1)), answer


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("name", ["open", "keyed"])
def test_a_body_over_the_cap_is_413_whether_announced_or_streamed(name: str, servers) -> None:
    s = servers[name]
    before = s.state()
    key = {"Authorization": f"Bearer {s.key}"} if s.key else {}
    for path, headers in (("/v1/memories", {**JSON, **key}), ("/ui/users/alice/memories",
                          {"Content-Type": "application/x-www-form-urlencoded", **key}), ("/mcp", {**JSON, **MCP_ACCEPT, **key})):
        status, answer = announce(s, path, headers)  # 100 MB announced, 64 KB sent: refused at once
        assert status == 413, (path, answer[:300])
        assert b"connection: close" in answer.lower()
        # chunked, no length: counted as it streams and cut off past the cap (never terminated: the
        # server cannot have waited for the end)
        status, answer = announce(s, path, headers, chunked=True, send_bytes=DEFAULT_MAX_BODY_BYTES + 65_536)
        ui_form = path.startswith("/ui")  # Starlette's form parser refuses a 1 MB field first (400)
        assert status == 413 or (ui_form and status == 400), (path, answer[:300])
    assert s.state() == before


def test_without_a_key_nothing_is_read_first(servers) -> None:
    s = servers["keyed"]
    before = s.state()
    for path in ("/v1/memories", f"/v1/memories/{s.memory_id}/curate?user_id=alice", "/mcp"):
        for headers in (JSON, {**JSON, "Authorization": "Bearer " + secrets.token_urlsafe(32)}):
            status, answer = announce(s, path, {**headers, **MCP_ACCEPT}, length=1_000_000, send_bytes=16_384)
            assert status == 401 and b"www-authenticate" in answer.lower(), (path, answer[:300])
        status, _ = announce(s, path, {**JSON, **MCP_ACCEPT}, chunked=True, send_bytes=16_384)
        assert status == 401
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for cookie in ({}, {"Cookie": f"hippocampus_ui_session={secrets.token_urlsafe(32)}"}):  # none, or a made-up session
        status, answer = announce(s, "/ui/users/alice/memories", {**form, **cookie}, length=1_000_000, send_bytes=16_384)
        assert status == 401 and b"/ui/login" in answer, answer[:300]
    assert s.state() == before


def test_the_largest_valid_request_fits_the_default_cap(servers) -> None:
    """A full text of control characters (6 bytes each on the wire) and 64 KiB of non-ASCII metadata,
    escaped as json.dumps escapes it: the worst single add still goes through."""
    s = servers["open"]
    text = "\x01" * 65_535
    metadata = {"note": "é" * 32_000}
    body = json.dumps({"messages": text, "user_id": "alice", "metadata": metadata}).encode()
    assert 500_000 < len(body) < DEFAULT_MAX_BODY_BYTES
    added = httpx.post(s.url + "/v1/memories", content=body, headers=JSON, timeout=120)
    assert added.status_code == 200, added.text[:300]
    s.memory.delete(added.json()["ids"][0], "alice")


# ---------------------------------------------------------------------- throttle
def test_wrong_keys_are_throttled_while_the_right_key_works(servers) -> None:
    s = servers["keyed"]
    wrong = {"Authorization": "Bearer " + secrets.token_urlsafe(32)}
    with httpx.Client(base_url=s.url, transport=httpx.HTTPTransport(local_address="127.0.0.2")) as guesser:
        answers = [guesser.get("/v1/memories", params={"user_id": "alice"}, headers=wrong) for _ in range(30)]
        codes = [a.status_code for a in answers]
        assert codes[:10] == [401] * 10 and codes[10:] == [429] * 20, codes
        wait = int(answers[-1].headers["retry-after"])
        assert 1 <= wait <= 60 and _error(answers[-1])["type"] == "AuthError"
        assert guesser.get("/v1/memories", params={"user_id": "alice"}, headers=s.auth()).status_code == 200
        assert guesser.post("/mcp", json={}, headers={**MCP_ACCEPT, **wrong}).status_code == 429
    with httpx.Client(base_url=s.url, transport=httpx.HTTPTransport(local_address="127.0.0.3")) as bystander:
        assert bystander.get("/v1/memories", params={"user_id": "alice"}, headers=wrong).status_code == 401
        # no key at all is no guess (a web page cannot send one): never counted, never 429
        assert {bystander.get("/v1/memories", params={"user_id": "alice"}).status_code for _ in range(30)} == {401}
    assert s.app.state.auth_throttle.retry_after("127.0.0.2") is not None
    assert s.app.state.auth_throttle.retry_after("127.0.0.3") is None


def test_the_throttle_window_passes_and_its_memory_is_bounded() -> None:
    now = [1000.0]
    throttle = AuthThrottle(limit=3, window_s=60, max_clients=5, clock=lambda: now[0])
    for _ in range(3):
        assert throttle.retry_after("10.0.0.1") is None
        throttle.failure("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == pytest.approx(60)
    now[0] += 59.5
    assert throttle.retry_after("10.0.0.1") == pytest.approx(0.5)
    now[0] += 1
    assert throttle.retry_after("10.0.0.1") is None
    for n in range(50):
        throttle.failure(f"10.0.1.{n}")
    assert len(throttle) == 5
    for n in range(3):  # one machine's IPv6 /64 is one client
        throttle.failure(f"2001:db8::{n + 1}")
    assert throttle.retry_after("2001:db8::ffff") is not None and throttle.retry_after("2001:db8:0:1::1") is None


# ---------------------------------------------------------------------- headers, docs, healthz, log
def test_security_headers_on_every_answer(servers) -> None:
    s = servers["open"]
    with httpx.Client(base_url=s.url) as client:
        answers = {
            "rest": client.get("/v1/memories", params={"user_id": "alice"}),
            "ui": client.get("/ui/users/alice/memories"),
            "static": client.get("/ui/static/ui.js"),
            "missing": client.get("/nowhere"),
            "refused": client.get("/healthz", headers={"Host": REBIND}),
            "healthz": client.get("/healthz"),
        }
    for name, r in answers.items():
        assert r.headers.get("x-content-type-options") == "nosniff", name
        assert r.headers.get("referrer-policy") == "same-origin", name
        assert r.headers.get("x-frame-options") == "DENY", name
    csp = answers["ui"].headers["content-security-policy"]
    assert csp == CSP and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp and "script-src 'self'" in csp
    assert answers["ui"].headers["cache-control"] == "no-store" and answers["rest"].headers["cache-control"] == "no-store"
    assert "no-store" not in answers["static"].headers.get("cache-control", "")


def _slow_get(url: str, **kwargs: Any) -> httpx.Response:
    """httpx.get with room for a loaded CI machine (its default 5 s timed out there)."""
    return httpx.get(url, timeout=30.0, **kwargs)


def test_docs_need_a_key_and_healthz_says_only_ok(servers, shared_db, embedder) -> None:
    keyed, open_ = servers["keyed"], servers["open"]
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert _slow_get(keyed.url + path).status_code == 401, path
        assert _slow_get(keyed.url + path, headers={"Authorization": "Bearer " + secrets.token_urlsafe(32)}).status_code in (401, 429)
        assert _slow_get(keyed.url + path, headers=keyed.auth()).status_code == 200, path  # any valid key
        assert _slow_get(open_.url + path).status_code == 200, path
    for s in (keyed, open_):
        health = _slow_get(s.url + "/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"guard_{uuid.uuid4().hex[:10]}", embedder=embedder)
    app = create_app(memory, KeyRing.load(env={"HIPPOCAMPUS_API_KEY": OPERATOR_KEY}), public_docs=True, mcp=False,
                     ui=False, close_memory=False)
    try:
        with served(app) as url:
            assert _slow_get(url + "/openapi.json").status_code == 200
            assert _slow_get(url + "/v1/memories", params={"user_id": "alice"}).status_code == 401
    finally:
        memory.close()


def test_the_access_log_names_templates_never_query_strings(servers, caplog) -> None:
    s = servers["keyed"]
    caplog.set_level(logging.INFO, logger="hippocampus.access")
    secret_user, secret_text = "zelda-7f3a", "bank PIN 4711"
    with httpx.Client(base_url=s.url, headers=s.auth()) as client:
        client.get("/v1/memories", params={"user_id": secret_user})
        client.get(f"/v1/memories/{s.memory_id}", params={"user_id": "alice"})
        client.post("/v1/search", json={"query": secret_text, "user_id": "alice"})
        client.get("/ui/users/zelda-7f3a/search", params={"q": secret_text})
        client.get(f"/v1/memories?user_id={secret_user}", headers={"Host": REBIND})
        client.get("/healthz")  # the server thread logs each line before it answers the next request
    lines = [r.getMessage() for r in caplog.records if r.name == "hippocampus.access"]
    assert any(re.fullmatch(r"GET /v1/memories 404 \d+\.\dms", line) for line in lines), lines
    assert any(line.startswith("GET /v1/memories/{memory_id} 200 ") for line in lines), lines
    assert any(line.startswith("POST /v1/search 200 ") for line in lines), lines
    assert any(line.startswith("GET refused 421 ") for line in lines), lines
    text = "\n".join(lines)
    for secret in (secret_user, "bank", "4711", "PIN", "?", "alice"):
        assert secret not in text, secret


# ---------------------------------------------------------------------- the UI under its CSP, in Chromium
def test_the_ui_renders_under_its_content_security_policy(servers) -> None:
    """Every page, the login page and the consolidation button's script in Debian's Chromium: no
    Content-Security-Policy violation (the policy allows no inline script or style)."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.skip(f"no Chromium at {chromium}: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    s, keyed = servers["open"], servers["keyed"]
    pages = [f"{s.url}/ui", f"{s.url}/ui/users/alice/memories", f"{s.url}/ui/users/alice/memories/{s.memory_id}",
             f"{s.url}/ui/users/alice/search?q=Berlin", f"{s.url}/ui/users/alice/memories/987654321",
             f"{keyed.url}/ui/login", f"{s.url}/ui/users/alice/stats"]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_context().new_page()
            console: list[str] = []
            page.on("console", lambda m: console.append(m.text))
            page.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation',"
                                 " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
            violations: dict[str, Any] = {}
            for url in pages:
                answer = page.goto(url)
                assert answer is not None and answer.headers.get("content-security-policy") == CSP, url
                violations[url] = page.evaluate("window.__csp")
            page.click("#consolidate button")  # ui.js: fetch() the run, then poll its progress
            sync_api.expect(page.locator("#phase")).to_have_text(re.compile(r"^(done|failed)"), timeout=60_000)
            assert page.inner_text("#phase") == "done"
            violations["consolidate"] = page.evaluate("window.__csp")
        finally:
            browser.close()
    assert {k: v for k, v in violations.items() if v != []} == {}  # a list each: the listener was there
    assert [line for line in console if "Content Security Policy" in line] == []


# ---------------------------------------------------------------------- `hippocampus serve`
def test_serve_options_and_its_log(tmp_path) -> None:
    """The command line's options reach the guard, and the log of a real `serve` holds the route
    template of each request, never its path or query string (uvicorn's own access log is off)."""
    service = ServiceProcess(str(tmp_path / "memories.db"), free_port(), tmp_path / "serve.log",
                             "--allowed-host", "memory.example.com", "--max-body-bytes", "2048")
    try:
        with httpx.Client(base_url=service.url) as client:
            listed = client.get("/v1/memories", params={"user_id": "zelda-7f3a"})
            assert listed.status_code == 200 and "server" not in listed.headers
            assert client.get("/healthz", headers={"Host": "memory.example.com"}).status_code == 200
            assert client.get("/healthz", headers={"Host": REBIND}).status_code == 421
            big = client.post("/v1/search", json={"query": "x" * 3000, "user_id": "zelda-7f3a"})
            assert big.status_code == 413 and "2048" in _error(big)["message"]
            client.get("/healthz")  # its line is written after the one before
    finally:
        service.stop()
    log = (tmp_path / "serve.log").read_text()
    assert "host names served: loopback, memory.example.com; request bodies up to 2048 bytes" in log
    assert re.search(r"hippocampus\.access: GET /v1/memories 200 \d+\.\dms", log), log[-2000:]
    assert re.search(r"hippocampus\.access: POST refused 413 ", log), log[-2000:]
    assert "zelda" not in log and "user_id=" not in log
