"""The suite never writes outside its temporary folders (issue 57): with the README's plain
`python -m pytest -q -n 4 --dist loadfile` (no HIPPOCAMPUS_HOME in the shell), tests that start a service
wrote `~/.hippocampus/services/<pid>.json` into the developer's real home. tests/conftest.py now gives every
run a temporary home (a folder per worker) and checks at the end that the real home gained no record."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hippocampus import config
from hippocampus.cli import registry


def _under(path: Path, folder: str) -> bool:
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def test_the_home_is_a_temporary_folder_of_this_run():
    run = os.environ["HIPPOCAMPUS_TESTS_HOME"]
    assert _under(Path(run), tempfile.gettempdir())
    assert not _under(Path(run), str(Path.home() / ".hippocampus"))
    assert _under(Path(os.environ["HIPPOCAMPUS_HOME"]), run)
    assert _under(config.DEFAULT_HOME, run)  # read at import: the home was set before hippocampus loaded
    assert _under(registry.services_dir(), run)
    assert _under(config.models_dir(), run)


def test_a_service_record_lands_in_the_temporary_home(tmp_path):
    """As `serve` records itself: in-process, and in a subprocess that inherits the tests' environment
    (every test that starts `hippocampus serve` passes os.environ on)."""
    record = registry.register("127.0.0.1", 9, str(tmp_path / "memories.db"), None)
    try:
        assert _under(registry.services_dir() / f"{record.pid}.json", os.environ["HIPPOCAMPUS_TESTS_HOME"])
    finally:
        registry.unregister(record.pid)
    out = subprocess.run([sys.executable, "-c", "from hippocampus.cli.registry import services_dir; print(services_dir())"],
                         capture_output=True, text=True, env=dict(os.environ), check=True, timeout=60).stdout.strip()
    assert _under(Path(out), os.environ["HIPPOCAMPUS_TESTS_HOME"])
