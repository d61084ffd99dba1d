"""Hostile text in the Web UI, in a real headless Chromium (Debian's, through Playwright) against a
real uvicorn on loopback (issue 31).

Each example stores a batch of texts (tests/hostile_text.py) for a fresh user with hostile user,
chat and who ids, then loads a page of each kind once: the memories list, one memory's page (its
edit form saved as shown), search results. The DOM's textContent must be the text itself, its
hidden control characters shown as \\xNN as in the CLI, line breaks as HTML reads them (CR and CRLF
are LF); no script of a text runs (no dialog, no page error, no element a text wrote). The UI's
exports (JSONL exact, MEMORY.md stripped, the format's rule) give every text back.

Before: a NUL vanished from every page, ESC or DEL showed as nothing; saving a memory's form
unchanged (say, only its category) rewrote a multi-line text with CRLF line breaks, dropped a
leading newline and trailing whitespace; a "?", "#" or "%" in a user id cut the redirect after a
save short (the next page was another user's, or none).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.server import create_app
from hippocampus.transfer import memory_md
from tests.hostile_text import PEOPLE, id_ok, ids, on_screen, text_ok, texts
from tests.service_support import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):  # CI installs it (.ci/run); a laptop without it skips, saying why
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

# A user's pages are /ui/users/<id>/...: an id with "/" has no page (the REST API and MCP, which take
# the id as a parameter, serve it).
ui_ids = ids.filter(lambda v: "/" not in v)
good_ids = ids.filter(id_ok)  # the REST and MCP properties check the refusals
_users = itertools.count()
INJECTED = "() => [document.scripts.length, document.querySelectorAll('img, iframe, object, embed, h1 ~ h1, td.text *, ol.hits a *').length]"


def shown(text: str) -> str:
    """A text as a page's DOM holds it: hidden controls as \\xNN, CR and CRLF read as LF by HTML."""
    return on_screen(text).replace("\r\n", "\n").replace("\r", "\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[tuple[Memory, Any, list[str]]]:
    """One store, one service (no keys: loopback only, no login) and one browser page for the module."""
    memory = Memory(milvus_uri=str(tmp_path_factory.mktemp("hostile-ui") / "m.db"), embedder=embedder)
    with served(create_app(memory, mcp=False, close_memory=False)) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_context(base_url=url).new_page()
        trouble: list[str] = []  # a dialog or a script error would mean a text ran as code
        page.on("dialog", lambda dialog: (trouble.append(f"dialog {dialog.message!r}"), dialog.dismiss()))
        page.on("pageerror", lambda error: trouble.append(f"page error {error}"))
        yield memory, page, trouble
        browser.close()
    memory.close()


def _clean(page: Any, trouble: list[str]) -> None:
    assert page.evaluate(INJECTED) == [1, 0] and trouble == []  # our one script; nothing a text wrote


@settings(max_examples=10)  # each example a batch of texts, six page loads and a form
@given(batch=st.lists(texts, min_size=1, max_size=6), user=ui_ids, chat=good_ids, who=good_ids)
@example(batch=PEOPLE, user="a?b#c%20", chat="[/x]", who="<b>x</b>")
@example(batch=["\n  leading newline, trailing whitespace \t\n", "x"], user="李雷", chat="{{ 7*7 }}", who="w")
@example(batch=["windows line\r\nends and a lone\rreturn\nnul\x00 esc\x1b[31m del\x7f"], user="u", chat="c", who="w")
def test_every_page_shows_the_text_literally(world, batch: list[str], user: str, chat: str, who: str) -> None:
    memory, page, trouble = world
    batch = [t for t in batch if text_ok(t)]
    user = f"{user.strip() or 'u'}-{next(_users)}"
    assume(batch and id_ok(chat) and id_ok(who) and id_ok(user))
    mids = memory.add_many([{"text": t, "user_id": user, "chat_id": chat, "who": who} for t in batch])
    stored = dict(zip(mids, batch))
    base = f"/ui/users/{quote(user, safe='')}"

    # the list, reached as a person does (the home page's "User id" form): every row's text, who and chat as they are
    page.goto("/ui")
    page.fill("#user_id", user)
    with page.expect_navigation():
        page.click("form[action='/ui/open'] button")
    assert page.url.endswith(f"{base}/memories")
    rows = page.eval_on_selector_all("table.memories tbody tr", "rows => rows.map(r => [Number(r.dataset.id), "
                                     "r.querySelector('td.text').textContent, r.cells[8].textContent, r.cells[9].textContent])")
    assert {mid: (text, w, c) for mid, text, w, c in rows} == {m: (shown(t), shown(who), shown(chat)) for m, t in stored.items()}
    assert user in page.text_content("h1")
    _clean(page, trouble)

    # one memory: the edit form holds the text as shown, and saving it as it is changes no text
    first = mids[0]
    assert page.goto(f"{base}/memories/{first}").status == 200
    assert page.input_value("#text") == shown(batch[0])
    history = page.eval_on_selector_all("tr[data-action=created] td.text", "cells => cells.map(c => c.textContent)")
    assert history == ["", shown(batch[0])]
    _clean(page, trouble)
    category = "fact" if memory.get(first, user).life.category.value != "fact" else "preference"
    page.select_option("#category", category)
    with page.expect_navigation():
        page.click("form.edit button[type=submit]")
    assert page.text_content(".flash") == "Saved." and page.url.endswith(f"{base}/memories/{first}?msg=saved")
    after = memory.get(first, user)
    assert after.text == batch[0] and after.life.category.value == category
    assert [e.action.value for e in memory.history(first, user) if e.old_text != e.new_text] == ["created"]

    # search: the hits' texts as they are
    assert page.goto(f"{base}/search?{urlencode({'q': batch[0], 'mode': 'dense'})}").status == 200
    hits = [tuple(hit) for hit in page.eval_on_selector_all("ol.hits > li[data-id]", "items => items.map(i => "
                                                            "[Number(i.dataset.id), i.querySelector('a').textContent])")]
    assert (first, shown(batch[0])) in hits and all(text == shown(stored[mid]) for mid, text in hits)
    _clean(page, trouble)

    # the UI's downloads: JSONL exactly, MEMORY.md stripped
    lines = [ln for ln in page.request.get(f"{base}/export?format=jsonl").text().split("\n") if ln]  # not splitlines: U+2028 is text
    assert sorted(json.loads(line)["text"] for line in lines) == sorted(batch)
    entries, warnings = memory_md.parse(page.request.get(f"{base}/export?format=md").text())
    assert warnings == [] and sorted(e.text for e in entries) == sorted(t.strip() for t in batch)


def test_the_add_form_keeps_the_lines_as_typed_and_a_slash_user_is_refused_clearly(world) -> None:
    """Browsers send a textarea's line breaks as CRLF: the UI stores them as typed (LF), as every other
    face does (before: "line one\\r\\nline two"). A user id with "/" has no page: one clear line."""
    memory, page, trouble = world
    user = f"form-{next(_users)}"
    typed = "line one\nline two [/x] <b>not bold</b>\n{{ 7*7 }}"
    page.goto(f"/ui/users/{user}/memories")
    page.fill("#new-text", typed)
    with page.expect_navigation():
        page.click("form[aria-label='add a memory'] button[type=submit]")
    assert page.text_content(".flash") == "Memory added."
    assert [r.text for r in memory.get_all(user)] == [typed] and page.input_value("#text") == typed
    _clean(page, trouble)
    page.goto("/ui")
    page.fill("#user_id", "team/alice")
    with page.expect_navigation():
        page.click("form[action='/ui/open'] button")
    assert page.text_content("h1") == "InvalidInput" and "contains '/'" in page.text_content("p.error")
