"""The declared ranges mean what they say (issue 56): .ci/floor.txt pins every runtime dependency at the floor
pyproject.toml declares (CI's floor job installs exactly that set), every cap says why beside it, and the floor
job's test list names files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*?)\s*(?:;.*)?$")


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def _version(text: str) -> tuple[int, ...]:
    """'2.6' and '2.6.0' are one version; a floor is compared by its numbers."""
    parts = [int(p) for p in re.findall(r"\d+", text)]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _dependencies() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {}
    for spec in project["dependencies"]:
        name, ranges = REQUIREMENT.match(spec).groups()
        found[_name(name)] = ranges
    return found


def _floor_file() -> dict[str, str]:
    pins = {}
    for line in (ROOT / ".ci" / "floor.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f".ci/floor.txt: {line!r} is not an exact pin"
            pins[_name(name)] = version.strip()
    return pins


def _floor(ranges: str) -> str | None:
    low = re.search(r"(?:>=|==)\s*([\w.]+)", ranges)
    return low.group(1) if low else None


def test_every_runtime_dependency_is_pinned_at_its_declared_floor() -> None:
    deps, pins = _dependencies(), _floor_file()
    no_floor = [name for name, ranges in deps.items() if _floor(ranges) is None]
    assert not no_floor, f"dependencies without a floor (>= or ==): {no_floor}"
    missing = sorted(set(deps) - set(pins))
    assert not missing, f".ci/floor.txt lacks {missing}"
    wrong = {name: (deps[name], pins[name]) for name in deps if _version(pins[name]) != _version(_floor(deps[name]))}
    assert not wrong, f"pinned elsewhere than the declared floor (range, pin): {wrong}"


def test_every_cap_says_why_beside_it() -> None:
    """A range held below a release (`<`, `==`, `~=`) carries a comment on its line or the lines just above."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text[text.index("dependencies = ["):]
    lines = block[:block.index("\n]")].splitlines()[1:]
    silent = []
    for i, line in enumerate(lines):
        spec = re.match(r'\s*"([^"]+)"', line)
        if spec and re.search(r"<|==|~=", spec.group(1)):
            if "#" not in line and not (i and lines[i - 1].lstrip().startswith("#")):
                silent.append(spec.group(1))
    assert not silent, f"caps without a reason beside them: {silent}"


def test_the_floor_job_runs_files_that_exist() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    listed = re.search(r"^FLOOR_TESTS=\((.*?)^\)", ci, re.S | re.M)
    assert listed, ".ci/run has no FLOOR_TESTS list"
    files = listed.group(1).split()
    assert files and all((ROOT / f).is_file() for f in files), [f for f in files if not (ROOT / f).is_file()]
    assert "-c .ci/floor.txt" in ci
