"""Whatever the library accepts, the CLI shows literally and never crashes on (issue 31, case 1).

Before: `hippocampus add "closing tag [/x] in my notes"` made `list`, `search` and `get` end in a rich
MarkupError traceback, and "Use [bold]sudo[/bold] and see [link] in the wiki" lost its brackets. The
property adds texts a person writes and odd ones (rich markup, Markdown, HTML, Jinja, emoji codes, CJK,
RTL, combining marks, control characters, very long words) through the library, then reads them back
through `list`, `get`, `search` and `history`, as tables at two widths and as --json."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, reject, settings
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app
from hippocampus.errors import InvalidInput
from hippocampus.validation import check_id, check_text
from tests.hostile_text import accepted, ids, on_screen, texts  # the strategy every face's property shares

WIDE = CliRunner(env={"COLUMNS": "250"})
NARROW = CliRunner(env={"COLUMNS": "80"})

_BOX = re.compile(r"[\u2500-\u257f]")  # the tables' borders


def squash(text: str) -> str:
    """Text as a comparison sees it: no whitespace (tables wrap and pad) and no border characters."""
    return _BOX.sub("", "".join(text.split()))


def prefix(text: str, chars: int) -> str:
    """The start of a one-line view (`list`, `search`, `history` cut long texts)."""
    return " ".join(text.split())[:chars]


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    uri = str(tmp_path_factory.mktemp("hostile") / "m.db")
    memory = Memory(milvus_uri=uri, embedder=embedder)
    yield uri, memory
    memory.close()


_users = itertools.count()


def run(runner: CliRunner, uri: str, *args: str) -> str:
    result = runner.invoke(app, ["--uri", uri, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


@settings(max_examples=12)
@given(text=texts, chat=ids, who=ids, user=ids)
@example(text="closing tag [/x] in my notes", chat="default", who="erin", user="erin")
@example(text="Use [bold]sudo[/bold] and see [link] in the wiki", chat="[/chat]", who="[bold]x", user="[/x]")
def test_every_view_shows_what_was_stored_literally(store, text: str, chat: str, who: str, user: str):
    uri, memory = store
    if not (accepted(check_text, text) and all(accepted(lambda v: check_id("id", v), v) for v in (chat, who))):
        reject()
    user = f"{user.strip() or 'u'}-{next(_users)}"  # each example alone in its views
    if not accepted(lambda v: check_id("user_id", v), user):
        reject()
    try:
        mid = memory.add(text, user_id=user, chat_id=chat, who=who, metadata={"note": text[:200]}).ids[0]
    except InvalidInput:
        reject()  # the library refused it (e.g. metadata limits): nothing to show

    # --json: exactly what was stored
    [row] = json.loads(run(WIDE, uri, "list", "-u", user, "--json"))
    assert (row["text"], row["chat_id"], row["who"]) == (text, chat, who)
    record = json.loads(run(WIDE, uri, "get", str(mid), "-u", user, "--json"))
    assert record["text"] == text and record["metadata"]["note"] == text[:200]
    query = text[:300]
    found = json.loads(run(WIDE, uri, "search", "-u", user, "--mode", "dense", "--json", "--", query))
    assert [h["text"] for h in found["episodic"]] == [text]
    events = json.loads(run(WIDE, uri, "history", str(mid), "-u", user, "--json"))
    assert events[0]["action"] == "created" and events[0]["new_text"] == text

    # tables: the text itself, brackets and all (wrapped and padded: compared without whitespace)
    full, start, start40 = squash(on_screen(text)), squash(on_screen(prefix(text, 30))), squash(on_screen(prefix(text, 15)))
    listed = squash(run(WIDE, uri, "list", "-u", user))
    assert start in listed and squash(on_screen(" ".join(chat.split())[:7])) in listed
    shown = squash(run(WIDE, uri, "get", str(mid), "-u", user))
    assert full in shown and squash(on_screen(who)) in shown and squash(on_screen(chat)) in shown
    assert start in squash(run(WIDE, uri, "search", "-u", user, "--mode", "dense", "--", query))
    assert start40 in squash(run(WIDE, uri, "history", str(mid), "-u", user))
    for command in (["list"], ["get", str(mid)], ["search", "--mode", "dense", "--", query], ["history", str(mid)]):
        run(NARROW, uri, command[0], "-u", user, *command[1:])  # never raises at 80 columns either


def test_no_escape_sequence_reaches_the_terminal(store):
    """A memory's ESC sequence (recolour, retitle, clear) is shown as \\x1b, not sent to the terminal."""
    uri, memory = store
    mid = memory.add("red \x1b[31malert\x1b[0m and a bell\x07", user_id="esc-user").ids[0]
    for args in (["list"], ["get", str(mid)], ["history", str(mid)]):
        out = run(WIDE, uri, *args, "-u", "esc-user")
        assert "\x1b" not in out and "\x07" not in out and "\\x1b[31malert" in out


def test_import_warnings_keep_their_brackets(tmp_path: Path):
    """The MEMORY.md import warning quotes the heading format '### [id] category | ...' (its "[id]" was lost)."""
    md = tmp_path / "MEMORY.md"
    md.write_text("# Agent Memory\n\n## Active Memories\n\n### oops, not a heading [/x]\nsome text\n", encoding="utf-8")
    out = run(WIDE, str(tmp_path / "m.db"), "import", str(md), "-u", "erin")
    assert "'### [id] category | score | YYYY-MM-DD | hits'" in out and "1 skipped" in out


def test_an_error_quoting_user_input_keeps_its_brackets(tmp_path: Path):
    result = WIDE.invoke(app, ["--uri", str(tmp_path / "m.db"), "add", "x", "-u", "erin", "-m", "[/x]"])
    assert result.exit_code == 2 and result.stderr.strip() == "error: InvalidInput: --meta takes key=value, got '[/x]'"


def test_the_reported_case_in_a_shell(tmp_path: Path):
    """The commands of the report, as a user types them, each in its own process (fresh HIPPOCAMPUS_HOME)."""
    env = {**os.environ, "HIPPOCAMPUS_HOME": str(tmp_path / "home"), "COLUMNS": "80"}
    env.pop("HIPPOCAMPUS_SERVER", None)

    def hippocampus(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "hippocampus", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done

    hippocampus("add", "closing tag [/x] in my notes", "-u", "erin")
    run(WIDE, str(tmp_path / "home" / "memories.db"), "add", "Use [bold]sudo[/bold] and see [link] in the wiki", "-u", "erin")
    out = hippocampus("list", "-u", "erin").stdout
    assert "closing tag [/x] in my notes" in out  # on one line: the text column is wide enough at 80 columns
    texts = "".join(line.split("│")[-2] for line in out.splitlines() if line.count("│") > 2)  # the text column
    assert "Use[bold]sudo[/bold]andsee[link]inthewiki" in squash(texts)
