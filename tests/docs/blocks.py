"""The fenced code blocks of the README and of the documentation pages, and how each is checked.

A block is checked in one of three ways, decided by its info string and the HTML comment just
before it (a reader sees both in the source):

- ```python or ```bash: run as written (python in a fresh interpreter, bash with the venv's bin on
  PATH), in the order of the pages, all in one store;
- ```text after `<!-- output of the block above -->`: what the block above printed, compared;
- any block after `<!-- not run: why -->` (or `<!-- not run here: why -->`): not run, for that reason.

Any other block is an error: it neither runs nor says why not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = ("python", "bash")
OUTPUT = "output of the block above"
_NOT_RUN = re.compile(r"^<!--\s*not run(?: here)?:\s*(?P<why>\S.*?)\s*-->\s*$", re.S)
_COMMENT = re.compile(r"^<!--\s*(?P<body>.*?)\s*-->\s*$", re.S)

# README first (its connect() block starts the service its last block stops), then the pages the
# README points to, in the order a reader meets them.
PAGES = ("README.md", "docs/index.md", "docs/python.md", "docs/cli.md", "docs/service.md", "docs/mcp.md", "docs/ui.md",
         "docs/concepts.md", "docs/aging.md", "docs/graph-memory.md", "docs/local-model.md",
         "docs/offline-vs-model.md", "docs/configuration.md", "docs/limits.md")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its code, and how it is checked."""

    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    kind: str  # "run", "output", "not run" or "unmarked"
    why: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    """Every fenced block of `page` (a path relative to the repository root), in order."""
    tokens = MarkdownIt("commonmark").parse((ROOT / page).read_text(encoding="utf-8"))
    found: list[Block] = []
    for i, token in enumerate(tokens):
        if token.type != "fence":
            continue
        lang = (token.info.split() or [""])[0]
        before = tokens[i - 1] if i and tokens[i - 1].type == "html_block" else None
        comment = _COMMENT.match(before.content.strip()) if before else None
        not_run = _NOT_RUN.match(before.content.strip()) if before else None
        line = (token.map[0] + 1) if token.map else 0
        if not_run:
            kind, why = "not run", not_run.group("why")
        elif comment and comment.group("body") == OUTPUT and lang == "text":
            kind, why = "output", OUTPUT
        elif lang in RUNNABLE:
            kind, why = "run", ""
        else:
            kind, why = "unmarked", ""
        found.append(Block(page, line, lang, token.content, kind, why))
    return found
