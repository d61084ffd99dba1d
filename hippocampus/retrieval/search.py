"""Finds a user's memories for a query; the facade decides what to do with them."""

from __future__ import annotations

from typing import Any, Sequence

from ..embeddings import Embedder
from ..models import MemoryRecord, MemoryType, SearchHit
from ..store import MilvusStore
from ..store import filters as F


class Retriever:
    """Dense search by cosine similarity, scoped by user and optionally by type and metadata."""

    def __init__(self, store: MilvusStore, embedder: Embedder):
        self.store = store
        self.embedder = embedder

    def scope(self, user_id: str, memory_type: MemoryType | None = None, metadata: dict[str, Any] | None = None) -> str:
        parts = [F.eq("user_id", user_id)]
        if memory_type is not None:
            parts.append(F.eq("memory_type", memory_type.value))
        for key, value in (metadata or {}).items():
            parts.append(F.json_eq("metadata", key, value))
        return F.and_(*parts)

    def search(
        self,
        query: str,
        user_id: str,
        limit: int,
        memory_type: MemoryType | None = None,
        metadata: dict[str, Any] | None = None,
        query_vector: Sequence[float] | None = None,
    ) -> list[SearchHit]:
        if limit <= 0:
            return []
        vector = query_vector if query_vector is not None else self.embedder.encode([query], role="query")[0]
        rows = self.store.search_dense([vector], self.scope(user_id, memory_type, metadata), limit)[0]
        return [_hit(row) for row in rows[:limit]]


def _hit(row: dict[str, Any]) -> SearchHit:
    similarity = row.pop("_distance")
    record = MemoryRecord.from_row(row)
    return SearchHit(memory=record, score=similarity, similarity=similarity)
