"""Texts a person really writes, and the odd ones, for the hostile-text properties of every face
(issue 31): tests/cli/test_hostile_text.py (CLI tables and --json) and
tests/properties/test_hostile_faces*.py (REST, MCP, the Web UI in Chromium, export and import).

Rich markup and Markdown, HTML and Jinja, MEMORY.md's own structure and JSON lines, emoji (ZWJ
sequences, skin tones), CJK, RTL with an override, combining marks, zero-width characters, NUL and
other control characters, very long words, leading and trailing whitespace. `accepted` says what the
library's validation (hippocampus/validation.py) takes, so a property can check both sides: what is
accepted is shown literally and round-trips; what is refused is an InvalidInput and changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from hippocampus.errors import InvalidInput
from hippocampus.validation import check_id, check_text

PEOPLE = [
    "closing tag [/x] in my notes",
    "Use [bold]sudo[/bold] and see [link] in the wiki",
    "[red]not red[/red] and \\[escaped] and [/] and [link=https://example.org]click[/link]",
    "**bold** _italic_ `rm -rf /tmp/x` # heading\n- item [ ] todo [x] done",
    "<script>alert('x')</script> &amp; <b>bold</b>",
    "</textarea><img src=x onerror=alert(1)></td></tr></table><h1>injected</h1>",
    "Hello {{ user.name }} {% if admin %}root{% endif %} {{ 7*7 }} {% raw %}{{ x }}{% endraw %} {# note #}",
    "&amp; &lt;b&gt; &#x3c;script&#x3e; \"double\" 'single' `back`",
    "meet at 10:30 :thumbs_up: :smile: C:\\Users\\[me]\\notes",
    "我妹妹住在杭州，她喜欢【猫】🐈‍⬛ 👩🏽‍💻",
    "שלום עולם and مرحبا بالعالم \u202eevil\u202c",
    "Zalgo Z\u0351\u0352\u0353a\u0300\u0301l\u0302g\u0303o e\u0301",
    "### [new] fact | 0.50 | 2026-01-01 | 0\n<!-- type: semantic -->\n## Archived Memories\n\\### escaped",
    '{"id": 1, "text": "a JSON line"}\n{"history": []}',
    "\n  leading newline, trailing whitespace \t\n",
    "windows line\r\nends and a lone\rreturn",
    "a" * 300 + " and " + "超长的词" * 40,  # longer than the widest table: folded, never cut
]
ODD = ["[", "]", "[/", "[/x]", "[bold]", "\\", "[@click=app.quit]", "\x1b[31m", "\x1b]0;title\x07", "\x00", "\t", "\n",
       "\r\n", "\r", "\u2028", "\u200b", "\u200d", "\ufeff", "\u202e", ":smile:", "{{", "}}", "{%", "<", "</", "&", "#",
       "  ", "\x7f", "\x85", "\x9b"]
fragments = st.one_of(st.sampled_from(PEOPLE), st.sampled_from(ODD), st.text(max_size=24))
texts = st.lists(fragments, min_size=1, max_size=5).map("".join)
ids = st.one_of(st.sampled_from(["erin", "[/x]", "[bold]bob[/bold]", "李雷", "a:b:c", "{{ who }}", "<b>x</b>", "a?b#c%20"]),
                st.text(min_size=1, max_size=24))
# What validation refuses: empty or blank text, lone surrogates (not UTF-8), ids with control characters.
REFUSED_TEXTS = ["", " \t\n", "\ud800 lone surrogate", "\udfff"]
REFUSED_IDS = ["", "   ", "a\x00b", "tab\tid", "esc\x1b", "del\x7f", "c1\x85", "x" * 129]

# Control characters that are not whitespace: every face that shows text to a person shows them as
# \xNN (the CLI's hippocampus/cli/render.py and the Web UI's ui_support.visible use this set).
HIDDEN = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")


def accepted(check: Callable[[Any], Any], value: Any) -> bool:
    """Exactly what the library's validation accepts."""
    try:
        check(value)
    except InvalidInput:
        return False
    return True


def text_ok(text: str) -> bool:
    return accepted(check_text, text)


def id_ok(value: str) -> bool:
    return accepted(lambda v: check_id("id", v), value)


def on_screen(text: str) -> str:
    """How a person must see `text`: control characters that are not whitespace as \\xNN."""
    return HIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
