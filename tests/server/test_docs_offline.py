"""/docs works without internet (issue 31, case 9): Swagger UI's assets come from the wheel
(fastapi-offline's Swagger UI 5 and ReDoc, mounted at /docs/static), so Debian's Chromium, with every request to a host
other than loopback aborted, renders the operations list. With keys set the page and the schema
still need a key (guard.py); the assets are public; the UI's CSP stays on /ui alone."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from tests.service_support import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
KEY = "docs-" + "Zq3vN8kPwX2rT6yLm4bHcJ9dFs"  # 128+ bits
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@pytest.fixture(scope="module")
def urls(shared_db, embedder) -> Iterator[dict[str, str]]:
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"docs_{uuid.uuid4().hex[:10]}", embedder=embedder)
    keyed = KeyRing.load(env={"HIPPOCAMPUS_API_KEY": KEY})
    with served(create_app(memory, mcp=False, close_memory=False)) as open_url, \
            served(create_app(memory, keyed, mcp=False, close_memory=False)) as keyed_url:
        yield {"open": open_url, "keyed": keyed_url}
    memory.close()


def test_the_docs_page_names_only_its_own_assets(urls):
    for path, assets in (("/docs", ("swagger-ui-bundle.js", "swagger-ui.css")), ("/redoc", ("redoc.standalone.js",))):
        html = httpx.get(urls["open"] + path).text
        assert all(f"/docs/static/{a}" in html for a in assets), path
        assert "cdn." not in html and "https://" not in html and "fonts.googleapis" not in html, path
    js = httpx.get(urls["open"] + "/docs/static/swagger-ui-bundle.js")
    assert js.status_code == 200 and "SwaggerUIBundle" in js.text[:2000] + js.text[-5000:]
    assert "content-security-policy" not in js.headers  # the UI's CSP is /ui's alone
    csp = httpx.get(urls["open"] + "/redoc").headers["content-security-policy"]  # the pages' own: nothing from outside
    assert "img-src 'self' data:" in csp and "connect-src 'self'" in csp


def test_keys_still_gate_the_page_and_schema_but_not_the_assets(urls):
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert httpx.get(urls["keyed"] + path).status_code == 401, path
        assert httpx.get(urls["keyed"] + path, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200, path
    assert httpx.get(urls["keyed"] + "/docs/static/swagger-ui.css").status_code == 200


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}: apt-get install chromium")
@pytest.mark.parametrize("server", ["open", "keyed"])
def test_chromium_offline_renders_the_operations(urls, server):
    sync_api = pytest.importorskip("playwright.sync_api")
    refused: list[str] = []

    def route(r: Any) -> None:
        host = urlsplit(r.request.url).hostname or ""
        if host in LOOPBACK:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    headers = {"Authorization": f"Bearer {KEY}"} if server == "keyed" else {}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            context = browser.new_context(base_url=urls[server], extra_http_headers=headers)
            context.route("**/*", route)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "Content Security Policy" not in m.text else None)
            page.goto("/docs")
            page.wait_for_selector(".opblock", timeout=20_000)
            paths = page.locator(".opblock-summary-path").all_inner_texts()
            assert any("/v1/search" in p for p in paths), paths
            assert page.locator(".opblock").count() >= 10
            page.goto("/redoc")  # ReDoc, also from the wheel: the operations' summaries as headings
            page.get_by_role("heading", name="Recall memories for a query").first.wait_for(timeout=20_000)
            assert errors == [] and refused == [], (errors, refused)
        finally:
            browser.close()
