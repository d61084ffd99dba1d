"""The mem0 drop-in over a real milvus-lite collection of the session's store and the real offline embedder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hippocampus.compat.mem0 import Memory

from .mem0_cases import ROWS, text_of


def open_mem0(shared_db: Path, embedder: Any) -> Memory:
    return Memory(milvus_uri=str(shared_db), collection_name=f"m0_{uuid.uuid4().hex[:10]}", embedder=embedder)


def _mem0_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("mem0") is not None


# The drop-in always; mem0's own Memory too where mem0ai is installed (reference.py), so the suite is checked.
BACKENDS = ["hippocampus", pytest.param("mem0", marks=pytest.mark.skipif(not _mem0_installed(), reason="mem0ai not installed"))]


@pytest.fixture(scope="module", params=BACKENDS)
def filled(request: Any, shared_db: Path, embedder: Any, tmp_path_factory: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """(memory, name -> id): every row of mem0_cases.ROWS added as mem0 adds it (infer=False: stored as said)."""
    if request.param == "mem0":
        from .reference import open_reference

        m = open_reference(tmp_path_factory.mktemp("mem0"), embedder)
    else:
        m = open_mem0(shared_db, embedder)
    ids = {}
    for name, (who, metadata) in ROWS.items():
        (added,) = m.add(text_of(name), metadata=metadata, infer=False, **who)["results"]
        ids[name] = added["id"]
    yield m, ids
    m.close()  # both have close()


@pytest.fixture
def mem0(shared_db: Path, embedder: Any) -> Iterator[Memory]:
    """A drop-in on a fresh collection of its own."""
    m = open_mem0(shared_db, embedder)
    yield m
    m.close()
