"""Issue 18: every failure of configuration or store opening, through the real CLI in a subprocess, is one
line on stderr naming the real cause, with exit code 2 (the caller's mistake) or 1 (the store failed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_")}
    clean.update({"HIPPOCAMPUS_HOME": str(tmp_path / "home"), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    clean.update(env or {})
    return subprocess.run([*prefix, sys.executable, "-m", "hippocampus", *args], cwd=tmp_path, env=clean,
                          capture_output=True, text=True, timeout=180)


def one_line(result: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ------------------------------------------------------------------ item 1: the config file
def test_a_hippocampus_yaml_that_is_not_utf8_is_a_config_error(tmp_path: Path):
    (tmp_path / "hippocampus.yaml").write_bytes(b"\xff\xfe x")
    one_line(run(tmp_path, "--uri", str(tmp_path / "x.db"), "stats"), 2, "ConfigError", "hippocampus.yaml", "not UTF-8")


def test_hippocampus_config_naming_a_directory_is_a_config_error(tmp_path: Path):
    (tmp_path / "conf").mkdir()
    result = run(tmp_path, "--uri", str(tmp_path / "x.db"), "stats", env={"HIPPOCAMPUS_CONFIG": str(tmp_path / "conf")})
    one_line(result, 2, "ConfigError", str(tmp_path / "conf"), "is a directory")


def test_hippocampus_config_naming_a_missing_file_is_a_config_error(tmp_path: Path):
    missing = tmp_path / "missing.yaml"
    result = run(tmp_path, "--uri", str(tmp_path / "x.db"), "stats", env={"HIPPOCAMPUS_CONFIG": str(missing)})
    one_line(result, 2, "ConfigError", str(missing), "does not exist")
    assert not (tmp_path / "x.db").exists()


# ------------------------------------------------------------------ item 6: a missing store directory
def test_a_store_in_a_missing_directory_is_refused_unless_asked_for(tmp_path: Path):
    typo = tmp_path / "nonexistent-root"
    line = one_line(run(tmp_path, "--uri", str(typo / "x.db"), "stats"), 2, "ConfigError", str(typo), "--create")
    assert "does not exist" in line and not typo.exists()
    env = {"HIPPOCAMPUS_CREATE_STORE_DIR": "1"}
    assert run(tmp_path, "--uri", str(typo / "y.db"), "stats", "--json", env=env).returncode == 0
    result = run(tmp_path, "--uri", str(typo / "deeper" / "x.db"), "--create", "stats", "--json")
    assert result.returncode == 0, result.stderr
    assert (typo / "deeper" / "x.db").is_dir()


def test_the_default_home_is_still_created(tmp_path: Path):
    result = run(tmp_path, "stats", "--json")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "home" / "memories.db").is_dir()


# ------------------------------------------------------------------ item 2: store opening
HOLD = "import sys; from hippocampus.store.connection import connect; c = connect(sys.argv[1], None); print('held', flush=True); sys.stdin.read()"


def test_a_store_held_by_another_process_is_one_line_naming_it(tmp_path: Path):
    store = tmp_path / "held.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        line = one_line(run(tmp_path, "--uri", str(store), "stats"), 1, "StoreLockedError", "locked by another process")
        assert f"pid {holder.pid}" in line
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -rn` (a network namespace without loopback)")
def test_without_loopback_the_embedded_store_still_opens(tmp_path: Path):
    """A local store is opened in this process (store/lite_client.py), served on no port or socket, so a
    network namespace without `lo` (unshare -n) does not stop it; the lock is released for the next process."""
    store = tmp_path / "nolo.db"
    result = run(tmp_path, "--uri", str(store), "--create", "stats", "--json", prefix=("unshare", "-rn"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert run(tmp_path, "--uri", str(store), "stats", "--json").returncode == 0  # the lock was not left behind
