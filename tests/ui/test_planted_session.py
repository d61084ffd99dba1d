"""Issue 42, finding 11: a page on another port of 127.0.0.1 (another origin, the same cookie jar)
plants a UI session cookie of its own: bob logged in with his key and hands his session id to
alice's browser. Before, alice's browser then showed bob's account and her forms wrote into it.
Now the session is bound to the browser that opened it (a value in localStorage, which is per
origin), so the page leaves the planted session and the service refuses its forms.

Real headless Chromium (Debian's package, driven by Playwright), a real uvicorn server and a second
loopback origin that sets the cookie the way any local web server can."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from hippocampus.server.sessions import COOKIE
from tests.service_support import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ALICE, BOB = "alice-ACUaNawf1SK0CusY0m-BHZQ4ropuYgGf", "bob-ld2yvIEtQSZ8VoyJzn0mu98edxFNpxoI"
if not os.path.exists(CHROMIUM):  # CI installs it (.ci/run); a laptop without it skips, saying why
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


class _Planter(http.server.BaseHTTPRequestHandler):
    """GET /plant?sid=X: sets the UI's session cookie for this host (ports do not count for cookies)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        sid = parse_qs(urlsplit(self.path).query).get("sid", [""])[0]
        self.send_response(200)
        if sid:  # not on the browser's own asks (/favicon.ico)
            self.send_header("Set-Cookie", f"{COOKIE}={sid}; Path=/ui; HttpOnly; SameSite=Strict")
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>cat pictures</title><p>nothing to see</p>")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def planter() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Planter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def world(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"plant_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add("I moved to Berlin in May", user_id="alice")
    memory.add("Bob's locker code is 4711", user_id="bob")
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{ALICE}=alice;{BOB}=bob"})
    with served(create_app(memory, keys, mcp=False, close_memory=False)) as url:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            yield url, memory, browser
            browser.close()
    memory.close()


def _bobs_session(url: str) -> str:
    """Bob logs in from his own browser (binding and all) and keeps the session id it gets."""
    answer = httpx.post(f"{url}/ui/login", data={"key": BOB, "bind": "bobs-own-browser"}, headers={"Origin": url})
    assert answer.status_code == 303, answer.text[:300]
    return answer.cookies[COOKIE]


def _bobs_texts(memory: Memory) -> list[str]:
    return sorted(r.text for r in memory.get_all("bob"))


def test_a_session_planted_from_another_port_is_left_and_cannot_write(world, planter):
    url, memory, browser = world
    before = _bobs_texts(memory)
    context = browser.new_context(base_url=url)
    page = context.new_page()
    try:
        page.goto("/ui")
        page.fill("#key", ALICE)
        page.click("form button[type=submit]")
        page.wait_for_url(re.compile(r"/ui/?$"))
        assert page.locator("ul.users a").all_inner_texts() == ["alice"]
        page.goto(f"{planter}/plant?sid={_bobs_session(url)}")  # alice opens a page on another port
        assert any(c["name"] == COOKIE and c["domain"] == "127.0.0.1" for c in context.cookies()), "planted"
        page.goto("/ui")
        page.wait_for_url(re.compile(r"/ui/login\?foreign=1$"), timeout=15_000)  # before: bob's account stayed
        assert "did not open" in page.inner_text("main")
        # what the add form would send from bob's page: alice's own binding, the page's form token
        bobs_page = page.request.get("/ui/users/bob/memories")
        assert bobs_page.status == 200, "the cookie is bob's live session"
        csrf = re.search(r'name="csrf" value="([^"]+)"', bobs_page.text()).group(1)
        mine = page.evaluate("window.localStorage.getItem('hippocampus-ui-bind')") or ""
        answer = page.request.post("/ui/users/bob/memories", headers={"Origin": url}, max_redirects=0,
                                   form={"text": "my bank PIN is 1234", "csrf": csrf, "bind": mine})
        assert answer.status == 422 and "did not open this session" in answer.text(), answer.status
    finally:
        context.close()
    assert _bobs_texts(memory) == before


def test_a_planted_session_cannot_write_from_a_page_without_script(world, planter):
    """With script off nothing leaves the page, so the form itself is sent: the service refuses it."""
    url, memory, browser = world
    before = _bobs_texts(memory)
    context = browser.new_context(base_url=url, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{planter}/plant?sid={_bobs_session(url)}")
        page.goto("/ui/users/bob/memories")
        assert "Memories of bob" in page.inner_text("h1")
        page.fill("form[aria-label='add a memory'] textarea", "my bank PIN is 1234")
        page.click("form[aria-label='add a memory'] button[type=submit]")
        assert "did not open this session" in page.content()
    finally:
        context.close()
    assert _bobs_texts(memory) == before


def test_the_browser_that_logged_in_still_writes(world):
    url, memory, browser = world
    context = browser.new_context(base_url=url)
    page = context.new_page()
    try:
        page.goto("/ui")
        page.fill("#key", ALICE)
        page.click("form button[type=submit]")
        page.wait_for_url(re.compile(r"/ui/?$"))
        page.goto("/ui/users/alice/memories")
        page.fill("form[aria-label='add a memory'] textarea", "My dentist is Dr. Okafor")
        page.click("form[aria-label='add a memory'] button[type=submit]")
        page.wait_for_url(re.compile(r"msg=added"))
    finally:
        context.close()
    assert "My dentist is Dr. Okafor" in [r.text for r in memory.get_all("alice")]
