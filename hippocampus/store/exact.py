"""Exact cosine top-k over every row in a filter, ranked with numpy: the safety net behind
MilvusStore.search_dense. An approximate index (HNSW with a selective filter) may return fewer than k
rows while more match; this reads the scope's vectors page by page, so memory stays bounded, and
asks Milvus only for plain paged reads (`iterate`, `query`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np


class PagedRows(Protocol):
    """What the scan reads of its store (MilvusStore, store/milvus.py), named here so that this module need
    not import the store that calls it."""

    def iterate(self, filter_expr: str, fields: Sequence[str] = ..., batch: int = ...,
                partition: str | None = None) -> Iterator[list[dict[str, Any]]]: ...
    def by_ids(self, ids: Sequence[int], fields: Sequence[str] = ..., partition: str | None = None,
               where: str = "") -> list[dict[str, Any]]: ...


def exact_top_k(store: PagedRows, vector: Sequence[float], filter_expr: str, limit: int, fields: Sequence[str],
                partition: str | None = None) -> list[dict[str, Any]]:
    """The `limit` rows nearest to `vector` by cosine, best first (ties by id), each with `_distance`."""
    if limit <= 0:
        return []
    q = np.asarray(vector, dtype=np.float32)
    q = q / (float(np.linalg.norm(q)) or 1.0)
    best_ids: list[np.ndarray] = []
    best_sims: list[np.ndarray] = []
    for page in store.iterate(filter_expr, ["id", "vector"], batch=5000, partition=partition):
        ids = np.fromiter((int(r["id"]) for r in page), dtype=np.int64, count=len(page))
        mat = np.asarray([r["vector"] for r in page], dtype=np.float32)
        norms = np.linalg.norm(mat, axis=1)
        sims = (mat @ q) / np.where(norms > 0, norms, 1.0)
        keep = np.argsort(-sims, kind="stable")[:limit]
        best_ids.append(ids[keep])
        best_sims.append(sims[keep])
    if not best_ids:
        return []
    ids = np.concatenate(best_ids)
    sims = np.concatenate(best_sims)
    order = np.lexsort((ids, -sims))[:limit]
    top = [(int(ids[i]), float(sims[i])) for i in order]
    rows = {int(r["id"]): r for r in store.by_ids([i for i, _ in top], fields, partition)}
    return [{**rows[i], "_distance": s} for i, s in top if i in rows]
