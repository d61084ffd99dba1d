"""Which rows a search keeps, and milvus-lite's fast path for it: a memory a newer fact superseded, or one
past a caller's `expires_at`, leaves every search; on milvus-lite those two JSON conditions are dropped from
the filter and checked here instead (`lite_scope`), which is the same answer at a tenth of the cost."""

from __future__ import annotations

import re
from typing import Any

from ..models import now_ts
from ..store import MilvusStore, expiry
from ..store import filters as F


def current_row(row: dict[str, Any]) -> bool:
    """Not superseded by a newer fact (the filter's twin, for servers without JSON `exists`)."""
    life = (row.get("metadata") or {}).get("life")
    return not (isinstance(life, dict) and life.get("superseded_by") is not None)


def live_row(row: dict[str, Any]) -> bool:
    """Not past a caller's `expires_at` (lifecycle/expiry.py; the filter's twin)."""
    return not expiry.expired(row.get("metadata") or {}, now_ts())


def kept_row(row: dict[str, Any]) -> bool:
    """What lite_scope's fast path keeps: neither superseded nor expired (both parts were in the scope)."""
    return current_row(row) and live_row(row)


CURRENT = F.json_missing("metadata", "life", "superseded_by")
LIVE = re.compile(r' and \(\(not exists metadata\["expires_at"\]\) or \(metadata\["expires_at"\] >= \d+\)\)$')
MARGIN = 10  # rows asked for beyond the depth when the search itself does not drop superseded memories


def lite_scope(store: MilvusStore, scope: str) -> str | None:
    """On milvus-lite, the scope without `not exists metadata["life"]["superseded_by"]` (the caller drops
    superseded rows itself, asking for MARGIN more); None where nothing is gained (another engine, no such
    part, or another JSON condition left). Why: milvus-lite evaluates a JSON path row by row in Python
    after converting every column of the partition's rows, 384-d vectors included; at 100k memories that
    filter took most of a search's time (docs/hybrid_at_scale.md)."""
    part = f" and ({CURRENT})"
    live = LIVE.search(scope)
    if store.capabilities.engine != "milvus-lite" or part not in scope or live is None:
        return None
    fast = scope[:live.start()].replace(part, "", 1)
    return None if "metadata[" in fast else fast
