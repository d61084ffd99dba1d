"""The small things a new user tripped on (issue 45, item 5), each through the CLI in a subprocess.

Before: `consolidate > log` wrote its progress bars into the log; offline, its table said "llm calls"
(no LLM was called: the rules decided); `--expires-at 2001-01-01` stored a memory hidden at once,
without a word; with --server and no key the error named the HTTP header, not HIPPOCAMPUS_API_KEY;
`npm pack` left its .tgz untracked in the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from tests.service_support import served

ROOT = Path(__file__).resolve().parents[2]
KEY = "alice-ACUaNawf1SK0CusY0m-BHZQ4ropuYgGf"


def hippocampus(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_")}
    env.update({"HIPPOCAMPUS_HOME": str(cwd / "home"), "COLUMNS": "100", "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    return subprocess.run([sys.executable, "-m", "hippocampus", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)


def test_consolidate_redirected_writes_no_bars_and_names_the_rules(tmp_path: Path):
    assert hippocampus(tmp_path, "--uri", "./m.db", "add", "I moved to Berlin in May", "-u", "a").returncode == 0
    run = hippocampus(tmp_path, "--uri", "./m.db", "consolidate")
    assert run.returncode == 0, run.stderr
    for phase in ("pending decisions", "distilling facts", "merging / separating"):
        assert phase not in run.stdout and phase not in run.stderr  # a bar only on a terminal
    assert "rule decisions (offline, no LLM)" in run.stdout and "llm calls" not in run.stdout


def test_an_expiry_already_past_is_refused_and_nothing_is_made(tmp_path: Path):
    run = hippocampus(tmp_path, "--uri", "./e.db", "add", "pay the rent", "-u", "a", "--expires-at", "2001-01-01")
    assert run.returncode == 2
    assert run.stderr.startswith("error: InvalidInput: --expires-at '2001-01-01' is already past (2001-01-01")
    assert not (tmp_path / "e.db").exists()


def test_the_auth_error_names_the_environment_variable(tmp_path: Path, shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"auth_{uuid.uuid4().hex[:10]}", embedder=embedder)
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{KEY}=alice"})
    with served(create_app(memory, keys, mcp=False, ui=False, close_memory=False)) as url:
        run = hippocampus(tmp_path, "--server", url, "list", "-u", "alice")
    memory.close()
    assert run.returncode != 0 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: AuthError:") and "HIPPOCAMPUS_API_KEY" in run.stderr


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_npm_pack_leaves_nothing_to_commit():
    done = subprocess.run(["git", "check-ignore", "-q", "clients/typescript/hippocampus-client-0.1.0.tgz"], cwd=ROOT)
    assert done.returncode == 0
