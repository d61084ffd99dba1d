"""A caller's `expires_at` as the store sees it (lifecycle/expiry.py resolves and writes it): the
metadata key, the filter that keeps live memories, and its twin in Python for rows already read."""

from __future__ import annotations

from typing import Any

from . import filters as F

KEY = "expires_at"  # the metadata key of a caller's expiry (validation.OWNED_KEYS)


def expired(row_or_metadata: dict[str, Any], now: int) -> bool:
    """A caller's expiry that has passed (a row, or a memory's metadata): expired when now > expires_at."""
    meta = row_or_metadata.get("metadata") if "metadata" in row_or_metadata else row_or_metadata
    at = meta.get(KEY) if isinstance(meta, dict) else None
    return isinstance(at, int) and not isinstance(at, bool) and now > at


def live(now: int) -> str:
    """The store filter that keeps what a caller's `expires_at` has not ended at `now` (needs JSON
    `exists`: Milvus 2.4+ and milvus-lite; older servers drop expired hits after retrieval)."""
    return F.or_(F.json_missing("metadata", KEY), f'metadata["{KEY}"] >= {F.literal(int(now))}')
