"""The service attacked as a hostile web page, a rebinding DNS name, a key guesser and a careless or
hostile client would attack it, against real servers on loopback: one without keys (the default) and
one with strong keys, each holding memories of alice, and Debian's Chromium (driven by Playwright)
visiting a page on another loopback port (another origin) while alice is logged in to the UI.

The verdict is always the victim's state: the store's count and every record and history of alice,
read through the library, identical before and after every attempt."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from hippocampus.validation import METADATA_MAX_DEPTH
from tests.server.attack_support import (
    PWNED,
    REBIND,
    AttackOrigin,
    Targets,
    announce_body,
    attack_page,
    attacks,
    changes,
    fill,
    form_fields,
    json_body,
    nested,
    route_table,
    snapshot,
)
from tests.service_support import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ALICE_KEY, OPERATOR_KEY = secrets.token_urlsafe(32), secrets.token_urlsafe(32)  # 256 bits each
TEXTS = ("I moved to Berlin in May", "I prefer green tea to coffee", "My sister lives in Lyon")
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass
class Service:
    name: str
    url: str
    app: Any
    memory: Memory
    targets: Targets
    key: str | None  # alice's key; None on the server without keys

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}


def _seed(memory: Memory, folder: Path) -> Targets:
    """alice's memories, a pair that consolidation would merge, and a deleted one whose undo would restore it."""
    ids = [memory.add(text, user_id="alice", chat_id="c1").ids[0] for text in TEXTS]
    ids += [memory.add("We adopted a cat named Miso", user_id="alice", chat_id="c9", ts=1_790_000_000 + 60 * n).ids[0]
            for n in range(2)]
    gone = memory.add("I used to live in Hamburg", user_id="alice", chat_id="c1").ids[0]
    memory.delete(gone, "alice")
    event = next(e.event_id for e in memory.history(gone, "alice") if e.action.value == "deleted")
    backup = folder / f"alice-{uuid.uuid4().hex[:6]}.jsonl"
    memory.export_jsonl("alice", backup)
    return Targets(user="alice", memory_id=ids[1], event_id=event, all_ids=ids + [gone],
                   md=memory.export_md("alice").replace(TEXTS[0], PWNED), jsonl=backup.read_text().replace(TEXTS[0], PWNED))


@pytest.fixture(scope="module")
def services(shared_db, embedder, tmp_path_factory) -> Iterator[dict[str, Service]]:
    keyrings = {"open": (KeyRing(), None),
                "keyed": (KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{ALICE_KEY}=alice;{OPERATOR_KEY}=*"}), ALICE_KEY)}
    out = {}
    with ExitStack() as stack:
        for name, (keys, key) in keyrings.items():
            memory = Memory(milvus_uri=str(shared_db), collection_name=f"atk_{name}_{uuid.uuid4().hex[:8]}", embedder=embedder)
            stack.callback(memory.close)
            targets = _seed(memory, tmp_path_factory.mktemp("attack"))
            app = create_app(memory, keys, close_memory=False)
            out[name] = Service(name, stack.enter_context(served(app)), app, memory, targets, key)
        yield out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):  # CI installs it (.ci/run); a laptop without it skips, saying why
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def attacker() -> Iterator[AttackOrigin]:
    with AttackOrigin().running() as origin:
        yield origin


def _state(s: Service) -> tuple[Any, ...]:
    return snapshot(s.memory, "alice", s.targets.all_ids)


def _log_in(page: Any, s: Service) -> None:
    """alice's own browser: logged in to the UI (a server without keys needs no login)."""
    page.goto(f"{s.url}/ui/login")
    if s.key:
        page.fill("#key", s.key)
        page.click("form button[type=submit]")
    page.goto(f"{s.url}/ui/users/alice/memories")
    assert TEXTS[0] in page.content(), "alice sees her memories before the attack"


@pytest.mark.parametrize("name", ["open", "keyed"])
def test_a_page_on_another_origin_changes_nothing(name: str, services, browser, attacker) -> None:
    """Every state-changing route of the schema, the UI's forms and /mcp, by auto-submitted forms
    (urlencoded and JSON-shaped text/plain) and no-cors fetches (text, form, no body), every GET route
    as an image, while the UI is framed: every such request refused, 0 changes, the frame shows
    nothing, alice stays logged in, and the attacker's origin never sees her key."""
    s = services[name]
    before = _state(s)
    context = browser.new_context()
    page = context.new_page()
    problems = []
    try:
        _log_in(page, s)
        batch = attacks(s.app, s.targets)
        assert {"/v1/history/{event_id}/undo", "/v1/consolidate", "/ui/users/{user_id}/batch-delete", "/ui/logout",
                "/mcp"} <= {p for _m, p in route_table(s.app)}, "the routes the issue names are attacked"
        gets = tuple(fill(p, s.targets) for m, p in route_table(s.app) if m == "GET" and "{run_id}" not in p)
        attacker.page = attack_page(s.url, batch, "/ui/users/alice/memories", gets)
        answers: list[tuple[str, str, int]] = []
        page.on("response", lambda r: answers.append((r.request.method, r.url, r.status)) if r.url.startswith(s.url) else None)
        page.goto(f"{attacker.url}/ui/attack")  # under /ui: where a path-scoped cookie goes
        page.wait_for_function("window.done === true", timeout=60_000)
        framed = page.frame(name="framed")
        assert framed is not None and framed.url.startswith(("chrome-error:", s.url)), "the frame was attempted"
        if any(text in framed.content() for text in TEXTS):
            problems.append("the UI rendered inside another site's frame")
        posts = [a for a in answers if a[0] not in ("GET", "OPTIONS")]
        assert len(posts) >= len(batch), "every attack reached the service"
        accepted = sorted({a for a in posts if a[2] < 400})
        if accepted:
            problems.append(f"{len(accepted)} cross-site requests the service accepted: {accepted[:12]}")
        after = _state(s)
        if after != before:
            problems.append(f"a cross-site request changed alice's memories:\n{changes(before, after)}")
        page.goto(f"{s.url}/ui/users/alice/memories")
        if TEXTS[0] not in page.content():
            problems.append("a cross-site POST logged alice out")
    finally:
        context.close()
    if s.key and any(s.key in cookie for cookie in attacker.cookies):
        problems.append("the key reached another service on this host in a cookie")
    assert not problems, "\n".join(problems)


def _rebound(s: Service, client: httpx.Client, method: str, template: str, csrf: str) -> int:
    """One request as a browser would send it to a rebound name: Host and Origin both the attacker's."""
    host = f"{REBIND}:{s.url.rsplit(':', 1)[1]}"
    headers = {"Host": host, "Origin": f"http://{host}", **s.auth(), **MCP_ACCEPT}
    path = fill(template, s.targets)
    if template.startswith("/ui") and method == "POST":
        return client.request(method, path, data={**form_fields(s.targets), "csrf": csrf}, headers=headers).status_code
    body = json_body(method, template, s.targets) if method not in ("GET", "HEAD") else None
    return client.request(method, path, json=body, headers=headers).status_code


@pytest.mark.parametrize("name", ["open", "keyed"])
def test_a_rebinding_host_is_421_on_every_route(name: str, services) -> None:
    """A DNS name rebound to 127.0.0.1 makes the page same-origin with the service; only the Host
    header tells. With a valid key, session and form token, every route answers 421 and nothing changes."""
    s = services[name]
    before = _state(s)
    with httpx.Client(base_url=s.url, timeout=120) as client:
        if s.key:
            client.post("/ui/login", data={"key": s.key}, headers={"Origin": s.url})
        page = client.get("/ui/users/alice/memories", headers=s.auth())
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert page.status_code == 200 and found, "a real session and form token to present"
        routes = route_table(s.app) + [("GET", "/ui/static/ui.css")]
        codes = {f"{m} {p}": _rebound(s, client, m, p, found.group(1)) for m, p in routes}
    assert {k: v for k, v in codes.items() if v != 421} == {}
    after = _state(s)
    assert after == before, changes(before, after)


def test_guessing_keys_is_throttled_while_the_right_key_works(services) -> None:
    """1,000 wrong keys from one address: 401 for a handful, then 429 with Retry-After; the right key
    from that very address still answers 200, and an address that guessed nothing still gets 401."""
    s = services["keyed"]
    with httpx.Client(base_url=s.url, transport=httpx.HTTPTransport(local_address="127.0.0.2")) as guesser:
        answers = [guesser.get("/v1/memories", params={"user_id": "alice"},
                               headers={"Authorization": f"Bearer {secrets.token_urlsafe(32)}"}) for _ in range(1000)]
        codes = [a.status_code for a in answers]
        assert codes[0] == 401 and set(codes) <= {401, 429}, sorted(set(codes))
        assert codes.count(401) <= 30 and codes[-1] == 429 and answers[-1].headers.get("retry-after"), codes.count(401)
        assert guesser.get("/v1/memories", params={"user_id": "alice"}, headers=s.auth()).status_code == 200
    with httpx.Client(base_url=s.url, transport=httpx.HTTPTransport(local_address="127.0.0.3")) as login_guesser:
        logins = [login_guesser.post("/ui/login", data={"key": secrets.token_urlsafe(32)}, headers={"Origin": s.url})
                  for _ in range(100)]
        assert logins[-1].status_code == 429, [r.status_code for r in logins][-5:]
    with httpx.Client(base_url=s.url, transport=httpx.HTTPTransport(local_address="127.0.0.5")) as bystander:
        assert bystander.get("/v1/memories", params={"user_id": "alice"}, headers={"Authorization": "Bearer x" * 8}).status_code == 401


@pytest.mark.parametrize("name", ["open", "keyed"])
def test_a_100_mb_body_is_refused_before_it_is_read(name: str, services) -> None:
    """The request announces 100 MB and sends 16 KB of it: an answer proves the server did not wait for
    the rest. REST, the UI's forms and /mcp; with keys, a chunked body without a key too."""
    s = services[name]
    before = _state(s)
    json_type = {"Content-Type": "application/json"}
    cases = [("/v1/memories?user_id=alice", json_type, False),
             ("/ui/users/alice/memories", {"Content-Type": "application/x-www-form-urlencoded"}, False),
             ("/mcp", {**json_type, **MCP_ACCEPT}, False)]
    if s.key:
        cases.append(("/v1/memories?user_id=alice", json_type, True))
    codes = {f"{path}{' chunked' if chunked else ''}": announce_body(s.url, "POST", path, headers, chunked=chunked,
                                                                      source="127.0.0.4") for path, headers, chunked in cases}
    allowed = {401, 413} if s.key else {413}
    assert {k: v for k, v in codes.items() if v not in allowed} == {}
    after = _state(s)
    assert after == before, changes(before, after)


def _mcp(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One MCP tool call over the service's stateless HTTP transport: (HTTP status, the JSON-RPC reply)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    answer = http.post("/mcp", json=body, headers=MCP_ACCEPT)
    return answer.status_code, answer.json()


ODD = {"a.b": 1, "$where": "1", "": 0, "\u0000k": "\u0000", "crab": "\U0001f980" * 50, "big": 1e308, "neg": -(2**63), "huge": 2**70,
       "list": [[[]], {}, None, True], "wide": {str(i): i for i in range(2000)}, "quote\"'<>&": "</script>"}


def test_deep_metadata_is_refused_and_odd_metadata_never_breaks_a_read(services) -> None:
    """300 levels of metadata are 4xx on every REST verb that takes metadata (a tool error on MCP); odd metadata is accepted or
    refused, and whatever was accepted can be listed, read, searched, exported, deleted and undone: never a 500."""
    s = services["open"]
    user = "carol"
    with httpx.Client(base_url=s.url, timeout=120) as http:
        plain = http.post("/v1/memories", json={"messages": "a plain memory", "user_id": user})
        assert plain.status_code == 200
        target = plain.json()["ids"][0]
        deep = nested(300)
        writes = {
            "add": ("POST", "/v1/memories", {"messages": "deep", "user_id": user, "metadata": deep}),
            "add_many": ("POST", "/v1/memories/batch", {"items": [{"messages": "deep", "user_id": user, "metadata": deep}]}),
            "observe": ("POST", "/v1/observe", {"messages": "user: deep thoughts", "user_id": user, "metadata": deep}),
            "update": ("PATCH", f"/v1/memories/{target}?user_id={user}", {"text": "deep", "user_id": user, "metadata": deep}),
        }
        codes = {verb: http.request(m, p, json=b).status_code for verb, (m, p, b) in writes.items()}
        assert {k: v for k, v in codes.items() if not 400 <= v < 500} == {}
        status, reply = _mcp(http, "add_memory", {"text": "deep", "user_id": user, "metadata": deep})
        assert 400 <= status < 500 or reply["result"].get("isError"), reply  # the parser's refusal, or a tool error
        odd = [http.post("/v1/memories", json={"messages": "odd", "user_id": user, "metadata": ODD}),
               http.post("/v1/memories", json={"messages": "at the limit", "user_id": user, "metadata": nested(METADATA_MAX_DEPTH)}),
               http.post("/v1/memories", content=b'{"messages": "nan", "user_id": "carol", "metadata": {"x": NaN}}',
                         headers={"Content-Type": "application/json"})]
        assert all(r.status_code == 200 or 400 <= r.status_code < 500 for r in odd), [r.text[:200] for r in odd]
        assert odd[1].status_code == 200, "metadata at the depth limit is accepted (and read back below)"
        listed = http.get("/v1/memories", params={"user_id": user})
        assert listed.status_code == 200, listed.text[:300]
        reads = {"search": http.post("/v1/search", json={"query": "odd deep plain", "user_id": user}).status_code,
                 "export": http.get(f"/ui/users/{user}/export").status_code,
                 "context": http.get("/v1/context", params={"user_id": user, "query": "odd"}).status_code}
        status, reply = _mcp(http, "list_memories", {"user_id": user})
        assert status == 200 and not reply["result"].get("isError"), reply
        for item in listed.json()["items"]:
            mid = item["id"]
            reads[f"get {mid}"] = http.get(f"/v1/memories/{mid}", params={"user_id": user}).status_code
            reads[f"delete {mid}"] = http.delete(f"/v1/memories/{mid}", params={"user_id": user}).status_code
            history = http.get(f"/v1/memories/{mid}/history", params={"user_id": user})
            deleted = [e["event_id"] for e in history.json() if e["action"] == "deleted"] if history.status_code == 200 else []
            reads[f"history {mid}"] = history.status_code if deleted else 0
            if deleted:
                reads[f"undo {mid}"] = http.post(f"/v1/history/{deleted[-1]}/undo", params={"user_id": user}).status_code
    assert {k: v for k, v in reads.items() if v != 200} == {}
