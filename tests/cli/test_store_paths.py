"""A typo'd store path never becomes a new, empty store (issue 31, item 8), through the CLI.

`hippocampus --uri ./aa.db list -u a` beside `a.db` used to make `aa.db` and print an empty table.
Now a command that only reads never makes a store (one line naming the nearest store beside it);
add and import make one only in the default home, in a directory holding no store yet, or with
--create."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hippocampus.cli.app import app
from hippocampus.cli.store_path import refusal

runner = CliRunner(env={"COLUMNS": "200"})
READ_ONLY = {
    "list": ["list", "-u", "a"],
    "get": ["get", "1", "-u", "a"],
    "search": ["search", "anything", "-u", "a"],
    "history": ["history", "1", "-u", "a"],
    "stats": ["stats"],
    "export": ["export", "-u", "a"],
    "graph": ["graph", "-u", "a"],
    "context": ["context", "-u", "a"],
}


def invoke(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A directory holding one store, a.db, with one memory of user a."""
    folder = tmp_path_factory.mktemp("project")
    invoke("--uri", str(folder / "a.db"), "add", "I keep my notes in a.db", "-u", "a")
    return folder


def test_a_read_only_command_on_a_typo_is_one_line_and_creates_nothing(project: Path, monkeypatch):
    monkeypatch.chdir(project)
    for name, args in READ_ONLY.items():
        result = invoke("--uri", "./aa.db", *args, code=2)
        assert result.stderr.strip() == "error: ConfigError: no store at ./aa.db (did you mean ./a.db?)", name
        assert not (project / "aa.db").exists(), name
    assert sorted(p.name for p in project.iterdir()) == ["a.db"]
    assert "I keep my notes" in invoke("--uri", "./a.db", "list", "-u", "a").stdout  # the real store still answers


def test_a_write_command_on_a_typo_beside_a_store_is_refused_until_asked(project: Path, monkeypatch):
    monkeypatch.chdir(project)
    refused = invoke("--uri", "./aa.db", "add", "a new thing", "-u", "a", code=2)
    line = refused.stderr.strip()
    assert line.startswith("error: ConfigError: no store at ./aa.db (did you mean ./a.db?)") and "--create" in line
    assert not (project / "aa.db").exists()
    made = invoke("--uri", "./b.db", "--create", "add", "a second store, on purpose", "-u", "a")
    assert "stored as" in made.stdout and (project / "b.db").exists()
    assert "on purpose" in invoke("--uri", "./b.db", "list", "-u", "a").stdout


def test_the_first_store_of_an_empty_directory_is_made_by_add(tmp_path: Path):
    invoke("--uri", str(tmp_path / "m.db"), "add", "first", "-u", "a")
    assert (tmp_path / "m.db").exists()
    invoke("--uri", str(tmp_path / "nothing.db"), "list", "-u", "a", code=2)  # a read does not make a second one
    assert not (tmp_path / "nothing.db").exists()


def test_the_default_store_is_still_made_on_first_add(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_")}
    env.update({"HIPPOCAMPUS_HOME": str(tmp_path / "home"), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    done = subprocess.run([sys.executable, "-m", "hippocampus", "add", "hello", "-u", "a"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and "stored as 1" in done.stdout, done.stderr
    assert (tmp_path / "home" / "memories.db").exists()


def test_the_rule_names_the_nearest_store(tmp_path: Path):
    for name in ("alpha.db", "memories.db", "notes.txt"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "LOCK").touch()  # what milvus-lite leaves: an empty directory is no store
    (tmp_path / "hollow.db").mkdir()
    assert refusal(str(tmp_path / "hollow.db"), "list", False, defaults=set()) is not None
    typo = str(tmp_path / "memorise.db")
    assert refusal(typo, "list", False, defaults=set()) == f"no store at {typo} (did you mean {tmp_path / 'memories.db'}?)"
    assert refusal(typo, "list", True, defaults=set()) is None  # --create / create_store_dir: said so
    assert refusal(typo, "add", False, defaults={Path(typo)}) is None  # the default store
    assert refusal(str(tmp_path / "alpha.db"), "list", False, defaults=set()) is None  # it exists
    assert refusal("http://127.0.0.1:19530", "list", False, defaults=set()) is None  # a server: not a path
    empty = tmp_path / "empty"
    empty.mkdir()
    assert refusal(str(empty / "x.db"), "add", False, defaults=set()) is None
    assert refusal(str(empty / "x.db"), "search", False, defaults=set()) == f"no store at {empty / 'x.db'}"
