"""Every file of the package reaches an installed copy: CI installs with `pip install .` (not editable), so a
file that no `package-data` glob names is missing there (the UI's favicon.svg was, until this test). Read from
pyproject.toml and `git ls-files`; the last test builds the wheel and lists it for the prompts, which live at the
repository's top (prompts/) and ship as hippocampus/prompts/."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]


def test_every_tracked_package_file_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    packages, data = set(config["packages"]), config.get("package-data", {})
    mapped = config.get("package-dir", {})  # package -> the folder it is built from (prompts/ -> hippocampus.prompts)
    try:
        tracked = subprocess.run(["git", "ls-files", "hippocampus", *mapped.values()], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for package, folder in mapped.items():  # read a mapped folder's files as the package's
        tracked = [package.replace(".", "/") + n[len(folder):] if n.startswith(folder + "/") else n for n in tracked]
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


def test_the_package_is_marked_typed():
    """PEP 561: hippocampus/py.typed ships, so a type checker reads the Client's and Memory's annotations
    (docs/architecture.md); the wheel test below finds it in the built wheel too."""
    assert (ROOT / "hippocampus" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "hippocampus" in config["packages"] and "py.typed" in config.get("package-data", {}).get("hippocampus", [])


def _setuptools_for_build() -> bool:
    """Whether this environment's setuptools can build the wheel itself (else pip fetches one, isolated)."""
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 77


def test_the_wheel_holds_the_top_level_prompts_at_hippocampus_prompts(tmp_path):
    """prompts/ at the repository's top is the one source (no copy, no symlink in the package); setuptools'
    package-dir puts it in the wheel as hippocampus/prompts/, where processors/base.packaged_prompts looks."""
    import zipfile

    from hippocampus.processors.base import packaged_prompts

    source = sorted(p.name for p in (ROOT / "prompts").glob("*.yaml"))
    assert len(source) > 5 and not (ROOT / "hippocampus" / "prompts").exists(), "prompts/ is the one source"
    assert not any(p.is_symlink() for p in [ROOT / "prompts", *(ROOT / "prompts").iterdir()])
    assert packaged_prompts() == ROOT / "prompts"  # a source checkout reads the top-level folder itself
    try:  # built from the tracked files alone, so a stale build/ folder cannot lend the wheel what it lacks
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    source_tree = tmp_path / "src"
    for name in tracked:
        if (ROOT / name).is_file() and not name.startswith(("clients/", "tests/", "docs/")):
            (source_tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source_tree / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source_tree)]
    subprocess.run(build + (["--no-build-isolation"] if _setuptools_for_build() else []), check=True, capture_output=True)
    [wheel] = tmp_path.glob("hippocampus-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(n.rpartition("/")[2] for n in names if n.startswith("hippocampus/prompts/")) == source
    assert not [n for n in names if n.startswith("prompts/")], "the prompts ship inside the package only"
    assert "hippocampus/py.typed" in names, "PEP 561: the wheel marks the package typed"


def test_the_version_is_pyprojects_installed_or_not():
    """hippocampus/_version.py: the installed metadata, or in a source checkout never installed the
    [project] version of the pyproject.toml beside the package; both are pyproject.toml's."""
    import hippocampus
    from hippocampus import _version

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert hippocampus.__version__ == _version.__version__ == _version._from_source() == declared
