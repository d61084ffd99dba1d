"""A read command never makes a store and a refused write leaves none behind (issue 45, item 3), in a
subprocess as a user runs it.

`hippocampus --uri ./empty.db list -u a` on an existing empty directory used to fill it with
milvus-lite's files; `--uri ./y.db add x -u a -m created_at=5` was refused (an owned field) and left
y.db behind; `--uri ./a` printed pydantic's report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def hippocampus(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_")}
    env.update({"HIPPOCAMPUS_HOME": str(cwd / "home"), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    return subprocess.run([sys.executable, "-m", "hippocampus", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)


def test_reads_and_refused_writes_leave_the_directory_as_it_was(tmp_path: Path):
    (tmp_path / "empty.db").mkdir()
    listed = hippocampus(tmp_path, "--uri", "./empty.db", "list", "-u", "a")
    assert listed.returncode == 2 and listed.stderr.strip() == "error: ConfigError: no store at ./empty.db", listed.stderr
    assert list((tmp_path / "empty.db").iterdir()) == []

    refused = hippocampus(tmp_path, "--uri", "./y.db", "add", "x", "-u", "a", "-m", "created_at=5")
    assert refused.returncode == 2 and "created_at" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "y.db").exists()

    into_empty = hippocampus(tmp_path, "--uri", "./empty.db", "add", "x", "-u", "a", "-m", "created_at=5")
    assert into_empty.returncode == 2
    assert (tmp_path / "empty.db").is_dir() and list((tmp_path / "empty.db").iterdir()) == []

    bad = hippocampus(tmp_path, "--uri", "./a", "list", "-u", "a")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert bad.stderr.startswith("error: ConfigError: --uri: a local milvus_uri must be a path ending in .db")
    assert "validation error" not in bad.stderr and "type=value_error" not in bad.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
