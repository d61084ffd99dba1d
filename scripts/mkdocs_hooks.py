"""MkDocs hook (mkdocs.yml `hooks:`): links from a docs page to a file of the repository outside
docs/ (`../scripts/bench.py`) work on GitHub but cannot be served by the site; they are shown as
the file's path instead, so `mkdocs build --strict` still fails on every link that is really broken
(a missing page, a missing file, a wrong anchor)."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((\.\./[^)\s#]+)(#[^)\s]*)?\)")


def outside_links_as_paths(markdown: str, page_dir: Path, docs_dir: Path) -> str:
    """The page's Markdown with each link to an existing file outside `docs_dir` replaced by its
    text and the file's path (relative to the repository root) in a code span. Pure but for the
    existence check; a link whose target does not exist is left alone, for the build to report."""
    root = docs_dir.parent.resolve()

    def replace(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        path = (page_dir / target).resolve()
        if not path.exists() or path.is_relative_to(docs_dir.resolve()) or not path.is_relative_to(root):
            return match.group(0)
        where = posixpath.join(*path.relative_to(root).parts)
        return text if text.strip("`") == where else f"{text} (`{where}`)"

    return _LINK.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: rewrite the page's links that leave docs/ (see the module docstring)."""
    docs_dir = Path(config["docs_dir"])
    page_dir = (docs_dir / page.file.src_path).parent
    return outside_links_as_paths(markdown, page_dir, docs_dir)
