"""`serve` and `mcp` guard the store path as every other command does (issue 31, item 8): `serve --uri
./aa.db` beside `a.db` is one line, exit 2, and makes nothing; a busy port is one line before the store
is opened. Real subprocesses, as a user runs them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def _run(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HIPPOCAMPUS_HOME": str(cwd / "home"), "COLUMNS": "200"}
    env.pop("HIPPOCAMPUS_SERVER", None)
    return subprocess.run([sys.executable, "-m", "hippocampus", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture()
def beside_a_store(tmp_path: Path) -> Path:
    (tmp_path / "a.db").write_bytes(b"")  # a store's name is enough for the rule (stores_beside)
    return tmp_path


@pytest.mark.parametrize("command", [["serve", "--port", "1"], ["mcp"]])
def test_a_typo_beside_a_store_is_refused_by_serve_and_mcp(beside_a_store: Path, command: list[str]) -> None:
    done = _run(beside_a_store, "--uri", "./aa.db", *command)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == ["error: ConfigError: no store at ./aa.db (did you mean ./a.db?); pass --create to make a new store there"]
    assert sorted(p.name for p in beside_a_store.iterdir() if p.name != "home") == ["a.db"]


def test_a_busy_port_is_one_line_before_the_store_opens(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _run(tmp_path, "--uri", "./first.db", "serve", "--port", str(port))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ConfigError: port ") and "in use" in lines[0], lines
    assert not (tmp_path / "first.db").exists()  # nothing was opened
