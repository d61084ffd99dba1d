"""What the attack suite (tests/server/test_attacks.py) shares: the attacker's own origin (a second
loopback port serving the attack page and recording what the browser sends it), the routes of the
service to attack with their parameters filled from real memories, the attack page itself, a
snapshot of a user's memories that any change would alter, and raw-socket requests that announce a
body they never send."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from typing import Any

from fastapi import FastAPI
from starlette.routing import Route

from hippocampus import Memory
from hippocampus.errors import NotFound

SAFE = {"GET", "HEAD", "OPTIONS"}
REBIND = "rebind.attacker.example"
PWNED = "pwned by a page on another origin"
FAR_FUTURE = 4_102_444_800  # 2100-01-01: a decay to then would archive or forget everything


@dataclass
class Attack:
    """One state-changing route with concrete parameters: what a hostile page would send."""

    method: str
    path: str  # concrete, with the query string
    json_body: dict[str, Any] | None
    form: dict[str, str] = field(default_factory=dict)


@dataclass
class Targets:
    """Real ids of the victim user, so that every attack that got through would change something."""

    user: str
    memory_id: int  # a live memory
    event_id: int  # the `deleted` event of a deleted memory: undoing it brings that memory back
    all_ids: list[int]
    md: str = ""  # the user's MEMORY.md with a memory's text changed: importing it would change that memory
    jsonl: str = ""  # the user's JSONL backup, likewise changed


def route_table(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path template) of every HTTP route the app serves, /mcp included (HEAD and OPTIONS left out)."""
    out: list[tuple[str, str]] = []

    def walk(routes: list[Any], prefix: str) -> None:
        for route in routes:
            if isinstance(route, Route):
                methods = route.methods or {"GET", "POST", "DELETE"}  # a bare ASGI route (/mcp) takes any
                out.extend((m, prefix + route.path) for m in sorted(methods - {"HEAD", "OPTIONS"}))
            elif hasattr(route, "original_router"):  # FastAPI >= 0.16x keeps an included router whole
                walk(route.original_router.routes, prefix + route.include_context.prefix)

    walk(app.routes, "")
    return sorted(set(out))


def state_changing(app: FastAPI) -> list[tuple[str, str]]:
    """The routes a hostile page would aim at: every non-GET route of the OpenAPI schema, of the UI and /mcp."""
    schema = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops if m.upper() not in SAFE}
    table = {(m, p) for m, p in route_table(app) if m not in SAFE}
    assert schema <= table, "every route of the schema is a route of the app"
    return sorted(table)


def fill(template: str, t: Targets) -> str:
    """A template's parameters replaced by the victim's real ids (`user_id` also in the query, as REST wants it)."""
    path = template.replace("{user_id}", t.user).replace("{memory_id}", str(t.memory_id))
    path = path.replace("{event_id}", str(t.event_id)).replace("{run_id}", "0")
    path = re.sub(r"\{[^}]+\}", "1", path)
    return f"{path}?user_id={t.user}" if not path.startswith("/ui") else path


def json_body(method: str, template: str, t: Targets) -> dict[str, Any] | None:
    """The JSON body that route would accept (None: it takes none) and that would change the victim's memories."""
    if template == "/mcp":
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "delete_memory", "arguments": {"memory_id": t.memory_id, "user_id": t.user}}}
    bodies: dict[tuple[str, str], dict[str, Any]] = {
        ("POST", "/v1/memories"): {"messages": PWNED, "user_id": t.user},
        ("POST", "/v1/memories/batch"): {"items": [{"messages": PWNED, "user_id": t.user}]},
        ("PATCH", "/v1/memories/{memory_id}"): {"text": PWNED, "user_id": t.user},
        ("POST", "/v1/memories/used"): {"memory_ids": [t.memory_id], "user_id": t.user},
        ("POST", "/v1/observe"): {"messages": f"user: {PWNED}", "user_id": t.user},
        ("POST", "/v1/search"): {"query": "Berlin", "user_id": t.user},
        ("POST", "/v1/consolidate"): {"user_id": t.user},
        ("POST", "/v1/decay"): {"user_id": t.user, "now": FAR_FUTURE},
        ("POST", "/v1/memories/{memory_id}/curate"): {"user_id": t.user, "category": "core", "importance": 0.01},
        ("POST", "/v1/import/md"): {"user_id": t.user, "text": t.md},
        ("POST", "/v1/import/jsonl"): {"user_id": t.user, "text": t.jsonl},
    }
    if template.startswith("/ui") or method == "DELETE" or template.endswith(("/undo", "/restore")):
        return None
    return bodies.get((method, template), {"user_id": t.user})


def form_fields(t: Targets) -> dict[str, str]:
    """One form that fits every UI form (unknown fields are ignored); the token is a guess, as it must be."""
    ids = ",".join(str(i) for i in t.all_ids)
    return {"text": PWNED, "ids": ids, "memory_id": str(t.memory_id), "category": "core", "importance": "0.01",
            "memory_type": "semantic", "user_id": t.user, "key": "guessed-key", "csrf": "0" * 40}


def attacks(app: FastAPI, t: Targets) -> list[Attack]:
    return [Attack(m, fill(p, t), json_body(m, p, t), form_fields(t)) for m, p in state_changing(app)]


def attack_page(victim: str, batch: list[Attack], framed: str, gets: tuple[str, ...] = ()) -> str:
    """A hostile page: the victim's `framed` page in an iframe, every attack as an auto-submitted form
    (urlencoded, and text/plain shaped like JSON) into a hidden frame and as no-cors fetches (text/plain
    and form bodies; for other methods also a CORS fetch, which needs a preflight). Sets window.done."""
    forms = []
    for n, a in enumerate(batch):
        url = escape(victim + a.path)
        hidden = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in a.form.items())
        forms.append(f'<form method="post" action="{url}" target="sink{2 * n}">{hidden}</form>')
        if a.json_body is not None:  # name + "=" + value reads as JSON: {"...": ..., "pad": "="}
            text = json.dumps({**a.json_body, "pad": ""})[:-2]
            forms.append(f'<form method="post" action="{url}" target="sink{2 * n + 1}" enctype="text/plain">'
                         f'<input type="hidden" name="{escape(text)}" value="&quot;}}"></form>')
    plan = [{"url": victim + a.path, "method": a.method, "json": json.dumps(a.json_body or {}),
             "form": a.form} for a in batch]
    sinks = "".join(f'<img src="{escape(victim + g)}" alt="">' for g in gets)
    sinks += "".join(f'<iframe name="sink{n}" style="width:10px;height:10px"></iframe>' for n in range(2 * len(batch)))
    return f"""<!doctype html><html><head><title>a hostile page</title></head><body>
<iframe name="framed" src="{escape(victim + framed)}" style="width:900px;height:600px"></iframe>
{sinks}{''.join(forms)}
<script>
const plan = {json.dumps(plan)};
window.done = false; window.outcomes = [];
async function run() {{
  const tries = [];
  for (const a of plan) {{
    const base = {{mode: "no-cors", credentials: "include"}};
    tries.push(fetch(a.url, {{...base, method: "POST", headers: {{"Content-Type": "text/plain"}}, body: a.json}}));
    tries.push(fetch(a.url, {{...base, method: "POST", body: new URLSearchParams(a.form)}}));
    tries.push(fetch(a.url, {{...base, method: "POST"}}));
    if (a.method !== "POST") {{
      tries.push(fetch(a.url, {{...base, method: a.method, body: a.json}}));
      tries.push(fetch(a.url, {{mode: "cors", credentials: "include", method: a.method,
                                headers: {{"Content-Type": "application/json"}}, body: a.json}}));
    }}
  }}
  const settled = await Promise.allSettled(tries);
  window.outcomes = settled.map(s => s.status);
  const forms = Array.from(document.forms);
  let loaded = 0;
  await new Promise(resolve => {{
    if (!forms.length) resolve();
    for (const f of forms) {{
      const sink = document.getElementsByName(f.target)[0];
      sink.addEventListener("load", () => {{ if (++loaded === forms.length) resolve(); }}, {{once: true}});
      f.submit();
    }}
  }});
  window.done = true;
}}
run();
</script></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        origin: AttackOrigin = self.server.origin  # type: ignore[attr-defined]
        origin.cookies.append(self.headers.get("Cookie", ""))
        body = origin.page.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class AttackOrigin:
    """The attacker's site: another port on 127.0.0.1, so another origin. Serves `page` at every path
    and keeps the Cookie header of every request (the victim's cookies must not reach it usefully)."""

    def __init__(self) -> None:
        self.page = ""
        self.cookies: list[str] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.origin = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[AttackOrigin]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()


def snapshot(memory: Memory, user: str, ids: list[int]) -> tuple[Any, ...]:
    """Everything a change would alter: the store's total, every record of `user` in full, the
    history of each id ever seen (a restored or merged-away memory too)."""
    records = sorted(r.model_dump_json() for r in memory.get_all(user))
    seen = sorted(set(ids) | {r.id for r in memory.get_all(user)})
    return memory.stats()["total"], records, {i: _history(memory, i, user) for i in seen}


def _history(memory: Memory, memory_id: int, user: str) -> list[tuple[int, str]] | None:
    try:
        return [(e.event_id, e.action.value) for e in memory.history(memory_id, user)]
    except NotFound:  # a reset erased it, history and all
        return None


def changes(before: tuple[Any, ...], after: tuple[Any, ...]) -> str:
    """What differs between two snapshots, in a line or two ("" when nothing)."""
    out = []
    if before[0] != after[0]:
        out.append(f"store total {before[0]} -> {after[0]}")
    old, new = set(before[1]), set(after[1])
    out += [f"gone or changed: {r[:160]}" for r in sorted(old - new)] + [f"new or changed: {r[:160]}" for r in sorted(new - old)]
    for mid in sorted(set(before[2]) | set(after[2])):
        if before[2].get(mid) != after[2].get(mid):
            out.append(f"history of {mid}: {before[2].get(mid)} -> {after[2].get(mid)}")
    return "\n".join(out)


def announce_body(url: str, method: str, path: str, headers: dict[str, str], length: int = 100 * 2**20,
                  send: int = 16_384, source: str = "127.0.0.1", chunked: bool = False, guard_s: float = 15.0) -> int:
    """Send the request line and headers of a `length`-byte body, then only its first `send` bytes,
    and return the status of the answer (0: none before `guard_s`). An answer at all proves the server did not wait for the rest;
    a server that reads the body first never answers (the guard turns that hang into 0; it is not a timing)."""
    host, port = url.removeprefix("http://").split(":")
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    lead = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{framing}\r\n{head}\r\n".encode()
    chunk = b"[" + b"1," * ((send - 2) // 2)
    if chunked:
        chunk = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    with socket.create_connection((host, int(port)), timeout=guard_s, source_address=(source, 0)) as sock:
        sock.sendall(lead)
        try:
            sock.sendall(chunk)
        except OSError:
            pass  # the server answered and closed already: what we want
        answer = b""
        try:
            while b"\r\n" not in answer:
                data = sock.recv(4096)
                if not data:
                    break
                answer += data
        except TimeoutError:
            return 0  # no answer: the server is waiting for the body it means to read
        except ConnectionResetError:
            pass  # closed on the unread rest: what came before the reset is the answer
    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    assert match, f"no HTTP answer: {answer[:200]!r}"
    return int(match.group(1))


def nested(depth: int) -> dict[str, Any]:
    """Metadata `depth` levels deep: {"n": {"n": ... {"n": 0}}}."""
    value: Any = 0
    for _ in range(depth):
        value = {"n": value}
    return value
