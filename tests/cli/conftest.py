"""Fixtures the CLI's service tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HIPPOCAMPUS_HOME of this test's own (services/ lives there); a started service inherits it."""
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HIPPOCAMPUS_SERVER", raising=False)
    return tmp_path / "home"
