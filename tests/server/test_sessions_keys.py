"""The Web UI's login sessions, key strength, `hippocampus keys new`, tenant stats without server
paths and RFC 6266 download names, against a real uvicorn on loopback (one plain service, one
`behind_https`), with httpx sending cookies by hand so every replay is explicit."""

from __future__ import annotations

import json
import re
import secrets
import time
import uuid
from urllib.parse import quote, unquote

import httpx
import pytest
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app as cli
from hippocampus.errors import ConfigError
from hippocampus.server import KeyRing, create_app
from hippocampus.server.auth import MIN_KEY_BITS, key_bits
from hippocampus.server.sessions import Sessions
from hippocampus.server.ui_support import COOKIE, SECURE_COOKIE
from tests.service_support import free_port, served

ALICE_KEY, OPERATOR_KEY = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
ODD_USER = 'al"ice ü\\x'  # a quote, a non-ASCII letter and a backslash: a download name must stay well-formed


@pytest.fixture(scope="module")
def world(shared_db, embedder):
    """Two services over one store: plain http, and one told it is behind TLS; the session clock of
    the first can be moved forward (`shift[0]` seconds) so expiry needs no sleep."""
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"sk_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add("I moved to Berlin in May", user_id="alice", chat_id="c1")
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{ALICE_KEY}=alice;{OPERATOR_KEY}=*"})
    plain = create_app(memory, keys, mcp=False, close_memory=False)
    tls = create_app(memory, keys, mcp=False, close_memory=False, behind_https=True)
    shift = [0.0]
    plain.state.ui_sessions.clock = lambda: time.time() + shift[0]
    with served(plain) as url, served(tls) as tls_url:
        yield {"url": url, "tls_url": tls_url, "app": plain, "memory": memory, "shift": shift}
    memory.close()


def _login(url: str, key: str = ALICE_KEY, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/ui/login", data={"key": key}, headers={"Origin": url, **headers}, timeout=30.0)


def _cookie(response: httpx.Response) -> tuple[str, str, str]:
    """(name, value, the whole Set-Cookie line) of the session cookie a login set."""
    (line,) = [v for k, v in response.headers.multi_items() if k.lower() == "set-cookie"]
    name, _, rest = line.partition("=")
    return name, rest.split(";")[0], line


def _get(url: str, path: str, name: str, sid: str) -> httpx.Response:
    return httpx.get(url + path, headers={"Cookie": f"{name}={sid}"}, timeout=30.0)


def _csrf(page: httpx.Response) -> str:
    match = re.search(r'action="/ui/logout".*?name="csrf" value="([0-9a-f]+)"', page.text, flags=re.S)
    assert match, "the page has a logout form with its token"
    return match.group(1)


def test_login_gives_an_opaque_httponly_strict_cookie(world):
    url = world["url"]
    response = _login(url)
    assert response.status_code == 303 and response.headers["location"] == "/ui"
    name, sid, line = _cookie(response)
    attrs = {a.strip().lower() for a in line.split(";")[1:]}
    assert name == COOKIE and ALICE_KEY not in line and ALICE_KEY not in sid and len(sid) >= 43
    assert {"httponly", "samesite=strict", "path=/ui"} <= attrs and "secure" not in attrs
    assert "alice" in _get(url, "/ui", name, sid).text
    assert _get(url, "/ui/users/alice/memories", name, sid).status_code == 200
    second = _cookie(_login(url))[1]
    assert second != sid  # every login a fresh random id
    # a key header still opens the UI without any session
    assert httpx.get(url + "/ui/users/alice/memories", headers={"Authorization": f"Bearer {ALICE_KEY}"}).status_code == 200
    assert httpx.get(url + "/ui/users/alice/memories").status_code == 303  # neither: to the login page


def test_behind_https_the_cookie_is_secure_and_host_prefixed(world):
    url = world["tls_url"]
    name, sid, line = _cookie(_login(url))
    attrs = {a.strip().lower() for a in line.split(";")[1:]}
    assert name == SECURE_COOKIE == "__Host-hippocampus_ui_session"
    assert {"secure", "httponly", "samesite=strict", "path=/"} <= attrs and not any(a.startswith("domain") for a in attrs)
    assert _get(url, "/ui/users/alice/memories", name, sid).status_code == 200
    assert _get(url, "/ui/users/alice/memories", COOKIE, sid).status_code == 303  # only the __Host- cookie counts here
    # on the plain service, a proxy's X-Forwarded-Proto: https asks for the same
    forwarded = _cookie(_login(world["url"], **{"X-Forwarded-Proto": "https"}))
    assert forwarded[0] == SECURE_COOKIE and "secure" in forwarded[2].lower()


def test_logout_revokes_the_session_on_the_server(world):
    url = world["url"]
    name, sid, _ = _cookie(_login(url))
    page = _get(url, "/ui/users/alice/memories", name, sid)
    out = httpx.post(f"{url}/ui/logout", data={"csrf": _csrf(page)}, headers={"Origin": url, "Cookie": f"{name}={sid}"})
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    replay = _get(url, "/ui/users/alice/memories", name, sid)  # the copied cookie, after logout
    assert replay.status_code == 303 and replay.headers["location"] == "/ui/login"


def test_a_logout_from_another_site_or_without_the_token_does_nothing(world):
    url = world["url"]
    name, sid, _ = _cookie(_login(url))
    token = _csrf(_get(url, "/ui/users/alice/memories", name, sid))
    stranger = f"http://127.0.0.1:{free_port()}"
    attempts = [{"Origin": stranger, "Cookie": f"{name}={sid}"}, {"Origin": "null", "Cookie": f"{name}={sid}"}]
    for headers in attempts:
        refused = httpx.post(f"{url}/ui/logout", data={"csrf": token}, headers=headers)
        assert refused.status_code in (403, 422) and "set-cookie" not in refused.headers, headers
    for forged in ("", "0" * 40):  # same origin, wrong or missing form token
        refused = httpx.post(f"{url}/ui/logout", data={"csrf": forged}, headers={"Origin": url, "Cookie": f"{name}={sid}"})
        assert refused.status_code in (403, 422)
    assert _get(url, "/ui/users/alice/memories", name, sid).status_code == 200  # still logged in


def test_a_session_expires(world):
    url, shift, sessions = world["url"], world["shift"], world["app"].state.ui_sessions
    name, sid, line = _cookie(_login(url))
    assert f"max-age={int(sessions.lifetime_s)}" in line.lower()
    try:
        shift[0] = sessions.lifetime_s - 5
        assert _get(url, "/ui/users/alice/memories", name, sid).status_code == 200
        shift[0] = sessions.lifetime_s + 1
        expired = _get(url, "/ui/users/alice/memories", name, sid)
        assert expired.status_code == 303 and expired.headers["location"] == "/ui/login"
        assert sessions.get(sid) is None
    finally:
        shift[0] = 0.0


def test_the_session_table_is_bounded(world):
    table = Sessions(lifetime_s=60, max_sessions=3)
    tenant = world["app"].state.keys.resolve(ALICE_KEY)
    ids = [table.open(tenant) for _ in range(5)]
    assert len(table) == 3 and [table.get(i) is not None for i in ids] == [False, False, True, True, True]


def test_failed_logins_are_throttled_when_the_service_throttles(world):
    if getattr(world["app"].state, "auth_throttle", None) is None:
        pytest.skip("this service has no failed-auth throttle (server/guard.py's auth_throttle) to use")
    url = world["url"]
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.7")) as guesser:
        answers = [guesser.post(f"{url}/ui/login", data={"key": secrets.token_urlsafe(32)}, headers={"Origin": url})
                   for _ in range(30)]
        right = guesser.post(f"{url}/ui/login", data={"key": ALICE_KEY}, headers={"Origin": url})
    assert right.status_code == 303  # a right key is never delayed, even from the throttled address
    codes = [a.status_code for a in answers]
    assert codes[0] == 303 and 429 in codes, codes
    blocked = answers[codes.index(429)]
    assert int(blocked.headers["Retry-After"]) >= 1
    assert _login(url).status_code == 303  # another address logs in as ever


def test_weak_keys_are_refused_and_strong_ones_accepted(tmp_path):
    for weak in ("aaaaaaaaaaaaaaaa", "short-key", "abcd" * 40, "0123456789" * 3, secrets.token_hex(16)[:31]):
        with pytest.raises(ConfigError, match=r"HIPPOCAMPUS_API_KEY: this API key is too weak") as err:
            KeyRing.load(env={"HIPPOCAMPUS_API_KEY": weak})
        assert "\n" not in str(err.value) and weak not in str(err.value)  # one line; the key itself is not repeated
    strong = [secrets.token_hex(16), secrets.token_urlsafe(32), secrets.token_urlsafe(24)]
    assert all(key_bits(k) >= MIN_KEY_BITS for k in strong)
    ring = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{strong[0]}=alice;{strong[1]}=*;{strong[2]}=bob"})
    assert ring.resolve(strong[0]).may("alice") and ring.resolve(strong[1]).is_operator
    with pytest.raises(ConfigError, match=r"HIPPOCAMPUS_API_KEYS\[2\]: this API key is too weak"):
        KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{strong[0]}=alice;aaaaaaaaaaaaaaaaaaaaaaaa=bob"})
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(f"keys:\n  - key: {strong[0]}\n    users: [a]\n  - key: passwordpassword1\n    users: '*'\n"
                         f"  - sha256: {'ab' * 32}\n    users: '*'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"entry 2: this API key is too weak"):
        KeyRing.load(keys_file, env={})
    keys_file.write_text(f"keys:\n  - key: {strong[0]}\n    users: [a]\n  - sha256: {'ab' * 32}\n    users: '*'\n",
                         encoding="utf-8")
    assert len(KeyRing.load(keys_file, env={})) == 2  # a digest cannot be judged, and is taken as given


def test_keys_new_prints_a_key_and_a_line_that_loads(tmp_path):
    runner = CliRunner()
    made = runner.invoke(cli, ["keys", "new", "--users", "alice,bob", "--name", "support-bot"])
    assert made.exit_code == 0, made.output
    lines = made.stdout.splitlines()
    key, line = lines[1], lines[3]
    assert key_bits(key) >= MIN_KEY_BITS and key not in line
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text("keys:\n" + line + "\n", encoding="utf-8")
    tenant = KeyRing.load(keys_file, env={}).resolve(key)
    assert tenant.name == "support-bot" and tenant.users == frozenset({"alice", "bob"}) and key not in keys_file.read_text()
    operator = runner.invoke(cli, ["keys", "new", "--operator", "--json"])
    assert operator.exit_code == 0, operator.output
    made_json = json.loads(operator.stdout)
    keys_file.write_text("keys:\n" + line + "\n" + made_json["line"] + "\n", encoding="utf-8")
    ring = KeyRing.load(keys_file, env={})
    assert ring.resolve(made_json["key"]).is_operator and made_json["key"] != key
    for bad in ([], ["--operator", "--users", "alice"], ["--users", " , "]):
        refused = runner.invoke(cli, ["keys", "new", *bad])
        assert refused.exit_code == 2 and "error:" in refused.output, bad


def test_a_tenant_key_sees_no_server_paths(world, shared_db):
    url, app = world["url"], world["app"]
    where = str(shared_db)
    alice = httpx.get(f"{url}/v1/stats", headers={"Authorization": f"Bearer {ALICE_KEY}"})
    assert alice.status_code == 200 and alice.json()["total"] >= 1
    assert "store" not in alice.json() and where not in alice.text
    operator = httpx.get(f"{url}/v1/stats", headers={"Authorization": f"Bearer {OPERATOR_KEY}"}).json()
    assert where in operator["store"]
    # a run whose error names the store (as a StoreError's message does): the tenant's page hides it
    app.state.consolidations.runs.append({"trigger": "ui", "started_at": time.time(), "users": ["alice"], "outcome": "failed",
                                          "error": f"StoreError: {world['memory'].config.milvus_uri} is not writable",
                                          "finished_at": time.time()})
    name, sid, _ = _cookie(_login(url))
    page = _get(url, "/ui/users/alice/stats", name, sid)
    assert page.status_code == 200 and "is not writable" in page.text and where not in page.text
    as_operator = httpx.get(f"{url}/ui/users/alice/stats", headers={"Authorization": f"Bearer {OPERATOR_KEY}"})
    assert where in as_operator.text


def test_the_export_name_is_well_formed_for_any_user_id(world):
    url = world["url"]
    world["memory"].add("a memory of an odd user", user_id=ODD_USER, chat_id="c1", infer=False)
    answer = httpx.get(f"{url}/ui/users/{quote(ODD_USER, safe='')}/export?format=md",
                       headers={"Authorization": f"Bearer {OPERATOR_KEY}"})
    assert answer.status_code == 200 and "a memory of an odd user" in answer.text
    header = answer.headers["content-disposition"]
    header.encode("ascii")  # a header is ASCII; anything else is in filename*
    match = re.fullmatch(r"""attachment; filename="([ !#-\[\]-~]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]+)""", header)
    assert match, header
    assert match.group(1) == "al_ice __x-memories.md"
    assert unquote(match.group(2), encoding="utf-8", errors="strict") == f"{ODD_USER}-memories.md"
