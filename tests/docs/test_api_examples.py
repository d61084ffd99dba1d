"""Issue 45: the API reference page (docs/api.md, generated from the docstrings) showed `Memory`'s
example as one quoted line: a `>>>` doctest renders as a Markdown quote. Every object the page names
now shows its example as a fenced python block, and each block runs as written, printing what its
`print(...)  # <output>` lines say (Memory's on a store in a temporary directory, Client's against a
real service found through HIPPOCAMPUS_SERVER, as the block says)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import uuid

import pytest

from hippocampus import Memory
from hippocampus.server import create_app
from tests.docs.blocks import ROOT
from tests.service_support import served

FENCE = re.compile(r"```python\n(.*?)```", flags=re.S)


def _documented() -> dict[str, object]:
    """Every object of the API page (`::: dotted.path`) and each of its public members."""
    found: dict[str, object] = {}
    for path in re.findall(r"^::: (\S+)", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), flags=re.M):
        module, _, name = path.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            obj = importlib.import_module(path)
        found[path] = obj
        for member, value in inspect.getmembers(obj):
            if not member.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value)):
                found[f"{path}.{member}"] = value
    return found


def test_no_docstring_of_the_api_page_holds_a_doctest():
    quoted = [name for name, obj in _documented().items() if re.search(r"^\s*>>>", inspect.getdoc(obj) or "", flags=re.M)]
    assert quoted == [], "shown as a quoted line on the API page; use a ```python block"


def _run(code: str) -> list[str]:
    """Run a block; its printed lines, and the lines its `print(...)  # <output>` comments promise."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docstring example>", "exec"), {})
    promised = re.findall(r"^\s*print\(.*\)\s+#\s*(.+)$", code, flags=re.M)
    return [out.getvalue().strip().splitlines(), promised]


def test_memorys_example_runs_as_written(tmp_path, monkeypatch):
    (code,) = FENCE.findall(inspect.getdoc(Memory))
    monkeypatch.chdir(tmp_path)  # "./demo.db" lands here
    printed, promised = _run(code)
    assert promised and printed == promised
    assert (tmp_path / "demo.db").exists()


def test_clients_example_runs_against_a_service(shared_db, embedder, monkeypatch):
    from hippocampus import Client

    (code,) = FENCE.findall(inspect.getdoc(Client))
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"apiex_{uuid.uuid4().hex[:10]}", embedder=embedder)
    try:
        with served(create_app(memory, mcp=False, close_memory=False)) as url:
            monkeypatch.setenv("HIPPOCAMPUS_SERVER", url)
            monkeypatch.delenv("HIPPOCAMPUS_API_KEY", raising=False)
            printed, promised = _run(code)
        assert promised and printed == promised
        assert [r.text for r in memory.get_all("alice")] == ["I moved to Berlin in May"], "it went to the service"
    finally:
        memory.close()


@pytest.mark.parametrize("name", ["hippocampus.memory.facade.Memory", "hippocampus.remote.client.Client"])
def test_the_page_shows_an_example(name):
    assert FENCE.search(inspect.getdoc(_documented()[name]) or ""), f"{name} has no python example"
