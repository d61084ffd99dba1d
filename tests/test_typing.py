"""The public API as a type checker sees it: `mypy` ([tool.mypy] in pyproject.toml: strict) reads the faces
(Memory, AsyncMemory, Client, AsyncClient, connect, the errors, the adapters) and tests/typecheck/
public_api_example.py, which uses each and assigns every result to an annotated variable, and finds nothing;
tests/typecheck/public_api_misuse.py must fail on exactly the lines it marks, so the check sees the faces'
signatures (a method put on a class at run time, as Client's once were, is invisible to it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parent.parent
MISUSE = ROOT / "tests" / "typecheck" / "public_api_misuse.py"
_ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")


def expected_errors(path: Path) -> set[tuple[int, str]]:
    """(line, error code) for each line marked `# error: <code>`."""
    marks = (re.search(r"# error: ([a-z-]+)$", line) for line in path.read_text(encoding="utf-8").splitlines())
    return {(number, mark.group(1)) for number, mark in enumerate(marks, 1) if mark}


def mypy(cache: Path, *files: str) -> list[re.Match[str]]:
    """mypy in-process with the project's settings (the files of [tool.mypy] when none are given)."""
    stdout, stderr, _status = api.run(["--config-file", "pyproject.toml", "--cache-dir", str(cache),
                                       "--no-error-summary", "--show-error-codes", "--no-pretty", *files])
    errors = [m for m in map(_ERROR.match, stdout.splitlines()) if m]
    assert stderr == "" and len(errors) == stdout.count(": error: "), stdout + stderr
    return errors


def test_the_public_api_is_strict_clean_and_misuse_is_refused(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the files of [tool.mypy] are relative to the repository
    clean = mypy(tmp_path)
    assert [m.group(0) for m in clean] == [], "the public API is not strict-clean"
    found = {(int(m["line"]), m["code"]) for m in mypy(tmp_path, str(MISUSE.relative_to(ROOT)))}  # the cache is warm now
    assert found == expected_errors(MISUSE) and len(found) >= 6


def test_every_adapter_module_is_checked_itself():
    """The adapters' own code is strict-clean, not only what the example touches: each module of
    hippocampus/integrations is one of the checked files (or under a checked folder)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    files = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["files"]
    checked = {ROOT / f for f in files}
    modules = sorted((ROOT / "hippocampus" / "integrations").glob("*.py"))
    assert len(modules) >= 6
    assert [m.name for m in modules if not checked & {m, *m.parents}] == []


def test_the_marks_are_read():
    assert (10, "arg-type") in expected_errors(MISUSE) and len(expected_errors(MISUSE)) == 6
