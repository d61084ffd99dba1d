"""Every code block of the README and of the documentation pages runs as written, or says why not
(issue 31, "The README as a test"): a promise of the README that breaks fails the build.

The blocks run in the order a reader meets them, in one fresh store (HIPPOCAMPUS_HOME in a temporary
directory, which is also the working directory): python blocks each in a fresh interpreter, bash
blocks with this venv's bin first on PATH. The only thing set from outside is the address
`connect()` uses (HIPPOCAMPUS_SERVER, for python blocks): a free loopback port, so the service the
README's connect() starts can never be a real one on this machine; the README's own
`hippocampus service stop` stops it, and the teardown makes sure. No model, no network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.blocks import PAGES, ROOT, Block, blocks
from tests.service_support import free_port

BLOCK_TIMEOUT_S = 180
_SET_UP = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install . && hippocampus demo",
    'python3 -m venv .venv && . .venv/bin/activate && pip install ".[test]" && python -m pytest -q -n 4 --dist loadfile',
}


def test_every_block_runs_or_says_why_not():
    unmarked = [f"{b.where} ({b.lang or 'no language'})" for page in PAGES for b in blocks(page) if b.kind == "unmarked"]
    assert not unmarked, "blocks that neither run (python, bash, an output) nor say why not (<!-- not run: why -->): " + ", ".join(unmarked)
    for page in PAGES:
        found = blocks(page)
        for before, block in zip([None, *found], found):
            if block.kind == "output":
                assert before is not None and before.kind == "run", f"{block.where}: an output must follow a block that runs"


def test_the_two_set_up_commands_are_what_ci_runs():
    """The README's two commands are skipped only because they are what CI itself runs: .ci/run
    installs the test extras and runs exactly the README's test command."""
    readme = [b for b in blocks("README.md") if b.code.strip() in _SET_UP]
    assert {b.code.strip() for b in readme} == _SET_UP and all(b.kind == "not run" for b in readme)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet ".[test]"' in ci and "\npython -m pytest -q -n 4 --dist loadfile\n" in ci


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_") and k not in ("OPENAI_API_KEY", "PYTHONPATH")}
    env["HIPPOCAMPUS_HOME"] = str(home / "home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "160"
    return env


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> Iterator[dict[str, object]]:
    """One reader's machine: a fresh home and working directory shared by every page, in order."""
    where = tmp_path_factory.mktemp("reader")
    env = _environment(where)
    state: dict[str, object] = {"cwd": where, "env": env, "server": f"http://127.0.0.1:{free_port()}"}
    try:
        yield state
    finally:  # the README's last block stops the service; make sure, even when a block failed
        if any((where / "home" / "services").glob("*.json")):
            subprocess.run([sys.executable, "-m", "hippocampus", "service", "stop"], env=env, cwd=where,
                           capture_output=True, timeout=60, check=False)


def _run(block: Block, state: dict[str, object]) -> str:
    env = dict(state["env"])  # type: ignore[arg-type]
    cwd = Path(str(state["cwd"]))
    if block.lang == "python":
        env["HIPPOCAMPUS_SERVER"] = str(state["server"])
        script = cwd / f"block_{block.page.replace('/', '_')}_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{block.where} ({block.lang}) exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


RUN_PAGES = [page for page in PAGES if any(b.kind == "run" for b in blocks(page))]


@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_blocks_run_as_written(page: str, reader):
    printed = ""
    for block in blocks(page):
        if block.kind == "run":
            printed = _run(block, reader)
        elif block.kind == "output":
            assert printed.strip().splitlines() == block.code.strip().splitlines(), f"{block.where}: the block above printed\n{printed}"
    if page == "README.md":
        _each_once(reader)


def _each_once(state: dict[str, object]) -> None:
    """Issue 45: following the README in order once stored "I moved to Berlin in May" twice (the quick
    start's and connect()'s). Every memory the README leaves for alice is there once."""
    done = subprocess.run([sys.executable, "-m", "hippocampus", "list", "-u", "alice", "--json"], cwd=Path(str(state["cwd"])),
                          env=dict(state["env"]), capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr[-2000:]
    listed = json.loads(done.stdout)
    texts = [m["text"] for m in (listed["items"] if isinstance(listed, dict) else listed)]
    assert "I moved to Berlin in May" in texts and len(texts) == len(set(texts)), texts
