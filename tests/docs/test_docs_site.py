"""The documentation site builds from docs/ with `mkdocs build --strict` (a broken link, a missing
anchor or a docstring mkdocstrings cannot read fails it), its API page is generated from the
docstrings, and it needs nothing from the network (no CDN fonts or scripts)."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from hippocampus import Memory
from tests.docs.blocks import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from mkdocs_hooks import outside_links_as_paths  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return out


def _text(html: str) -> str:
    """The words of a page, tags dropped (a code span's text stays), entities read."""
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def test_the_api_page_is_generated_from_the_docstrings(site: Path):
    api = _text((site / "api" / "index.html").read_text(encoding="utf-8"))
    add_doc = " ".join((inspect.getdoc(Memory.add) or "").replace("`", "").split())
    assert add_doc and add_doc[:120] in api
    for name in ("MemoryConfig", "AsyncClient", "InvalidInput", "ScriptedChatModel", "DeterministicEmbedder"):
        assert name in api, name


def test_the_api_page_lists_every_client_verb_made_from_the_verb_list(site: Path):
    """Client's and AsyncClient's verbs are written out in remote/client.py (generated from the verb list by
    `python scripts/verbs.py --write`), the source griffe reads; the verbs of more than one request are inherited
    from remote/transport.py (`inherited_members` in docs/api.md)."""
    from hippocampus import AsyncClient, Client
    from hippocampus.contract.verbs import VERBS

    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    for cls in (Client, AsyncClient):
        for verb in (v for v in VERBS if v.client.name):
            assert f'id="hippocampus.remote.client.{cls.__name__}.{verb.client.name}"' in html, (cls.__name__, verb.name)
    summary = " ".join((inspect.getdoc(Client.add) or "").split())
    assert summary.startswith("Remember a turn") and summary[:80] in _text(html)


def test_the_api_pages_examples_are_code_blocks(site: Path):
    """Issue 45: Memory's example once showed as one quoted line (a `>>>` doctest is a Markdown quote);
    its python block (tests/docs/test_api_examples.py runs it) is a code block of the page."""
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    blocks = [_text(block) for block in re.findall(r"<pre\b.*?</pre>", html, flags=re.S)]
    for start in ("with Memory(milvus_uri=", "with Client() as memory:"):
        assert any(start in block and "print(memory.search(" in block for block in blocks), start
    assert "&gt;&gt;&gt;" not in html and ">>> with" not in _text(html)


def test_every_page_of_the_nav_and_the_readme_links_are_built(site: Path):
    nav = re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), flags=re.M)
    assert len(nav) >= 20
    for page in nav:
        built = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), page
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#\s]+)", readme):
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_the_site_loads_nothing_from_the_network(site: Path):
    external = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)
    for page in site.rglob("*.html"):
        assert not external.search(page.read_text(encoding="utf-8")), f"{page.relative_to(site)} loads from the network"
    css = " ".join(p.read_text(encoding="utf-8") for p in site.rglob("*.css"))
    assert "fonts.googleapis" not in css and "@import url(http" not in css


def test_links_to_repository_files_outside_docs_show_their_path_and_broken_ones_stay_broken(tmp_path: Path):
    docs = tmp_path / "docs"
    (tmp_path / "scripts").mkdir(parents=True)
    docs.mkdir()
    (tmp_path / "scripts" / "bench.py").write_text("", encoding="utf-8")
    page = "[the bench](../scripts/bench.py), [`scripts/bench.py`](../scripts/bench.py), [gone](../scripts/gone.py), [in](x.md)"
    assert outside_links_as_paths(page, docs, docs) == (
        "the bench (`scripts/bench.py`), `scripts/bench.py`, [gone](../scripts/gone.py), [in](x.md)")
