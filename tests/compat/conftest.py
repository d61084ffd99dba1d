"""The mem0 drop-in over a real milvus-lite collection of the session's store and the real offline embedder."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from hippocampus.compat.mem0 import Memory

from .mem0_cases import ROWS, text_of


def open_mem0(shared_db: Path, embedder: Any) -> Memory:
    return Memory(milvus_uri=str(shared_db), collection_name=f"m0_{uuid.uuid4().hex[:10]}", embedder=embedder)


@pytest.fixture(scope="module")
def filled(shared_db: Path, embedder: Any) -> Iterator[tuple[Memory, dict[str, str]]]:
    """(memory, name -> id): every row of mem0_cases.ROWS added as mem0 adds it (infer=False: stored as said)."""
    m = open_mem0(shared_db, embedder)
    ids = {}
    for name, (who, metadata) in ROWS.items():
        (added,) = m.add(text_of(name), metadata=metadata, infer=False, **who)["results"]
        ids[name] = added["id"]
    yield m, ids
    m.close()


@pytest.fixture
def mem0(shared_db: Path, embedder: Any) -> Iterator[Memory]:
    """A drop-in on a fresh collection of its own."""
    m = open_mem0(shared_db, embedder)
    yield m
    m.close()
