"""mem0's own `Memory` (the reference implementation) set up like the drop-in, offline: a local Qdrant store (mem0's
default), its history in SQLite, and the same bundled embedder behind mem0's embedder interface. Used only when
mem0ai is installed: the suite's expected answers are then checked against mem0 itself."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class _MemZeroEmbedder:
    """mem0's embedder interface (embed / embed_batch, an action of add, update or search) over ours."""

    def __init__(self, embedder: Any):
        self.embedder = embedder

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.embedder.encode([text], role="query" if memory_action == "search" else "passage")[0].tolist()

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        return [v.tolist() for v in self.embedder.encode(texts, role="passage")]


def open_reference(where: Path, embedder: Any, *, asynchronous: bool = False) -> Any:
    """mem0.Memory (mem0.AsyncMemory with `asynchronous`) on a fresh local Qdrant under `where`; no LLM is called
    (the suite adds with infer=False)."""
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("OPENAI_API_KEY", "sk-unused")  # mem0 makes its OpenAI client eagerly; it is never called
    from mem0 import AsyncMemory, Memory

    m = (AsyncMemory if asynchronous else Memory).from_config({
        "vector_store": {"provider": "qdrant", "config": {"path": str(where / "qdrant"), "collection_name": "suite",
                                                          "embedding_model_dims": embedder.dim, "on_disk": True}},
        "history_db_path": str(where / "history.db")})
    m.embedding_model = _MemZeroEmbedder(embedder)
    return m
