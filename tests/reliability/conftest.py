"""Fixtures of the reliability suite, and the figures it measured, printed at the end of the run."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hippocampus import Memory

from ._support import COUNTS


@pytest.fixture(scope="module")
def module_memory(shared_db: Path, embedder):
    """One Memory (fresh collection) shared by a module's small tests; each test uses its own user ids."""
    m = Memory(milvus_uri=str(shared_db), collection_name=f"r_{uuid.uuid4().hex[:12]}", embedder=embedder)
    yield m
    m.close()


def pytest_terminal_summary(terminalreporter) -> None:
    if not COUNTS:
        return
    terminalreporter.section("reliability figures")
    for key in sorted(COUNTS):
        terminalreporter.write_line(f"{key}: {COUNTS[key]}")
