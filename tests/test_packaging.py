"""Every file of the package reaches an installed copy: CI installs with `pip install .` (not editable), so a
file that no `package-data` glob names is missing there (the UI's favicon.svg was, until this test). Read from
pyproject.toml and `git ls-files`; a wheel build checked the same list once by hand (211 files, none missing)."""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]


def test_every_tracked_package_file_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    packages, data = set(config["packages"]), config.get("package-data", {})
    try:
        tracked = subprocess.run(["git", "ls-files", "hippocampus"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    missing = []
    for name in tracked:
        path = Path(name)
        if path.suffix == ".py":
            if ".".join(path.parent.parts) not in packages:
                missing.append(name)
            continue
        owners = [(pkg, globs) for pkg, globs in data.items() if name.startswith(pkg.replace(".", "/") + "/")]
        if not any(fnmatch.fnmatch(name[len(pkg) + 1:], g) for pkg, globs in owners for g in globs):
            missing.append(name)
    assert not missing, f"not in any package or package-data glob of pyproject.toml: {missing}"
