"""ruff's lint rules (pyproject.toml [tool.ruff]) hold on the package, the tests, the scripts and the examples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "hippocampus", "tests", "scripts", "examples"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_every_third_party_import_is_declared() -> None:
    """deptry reads pyproject.toml: an import of a package that is only a dependency's dependency (DEP003),
    or of one not declared at all (DEP001), fails here; so does a declared package nothing imports (DEP002)."""
    done = subprocess.run([sys.executable, "-m", "deptry", "hippocampus"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
