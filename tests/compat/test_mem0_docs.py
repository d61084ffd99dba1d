"""docs/mem0.md stays true: its python example runs as written in a fresh interpreter and a fresh store, and prints
what the page says; every other block says why it does not run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.blocks import ROOT, blocks

PAGE = "docs/mem0.md"


def test_the_drop_in_page_runs_as_written(tmp_path: Path):
    found = blocks(PAGE)
    assert all(b.kind in ("run", "output", "not run") for b in found), [b.where for b in found if b.kind == "unmarked"]
    pairs = [(b, after) for b, after in zip(found, [*found[1:], None]) if b.kind == "run"]
    assert pairs and all(b.lang == "python" for b, _ in pairs)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_") and k != "OPENAI_API_KEY"}
    env.update(HIPPOCAMPUS_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    for block, after in pairs:
        ran = subprocess.run([sys.executable, "-c", block.code], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=180)
        assert ran.returncode == 0, f"{block.where}: {ran.stderr[-2000:]}"
        if after is not None and after.kind == "output":
            assert ran.stdout.strip() == after.code.strip(), block.where
