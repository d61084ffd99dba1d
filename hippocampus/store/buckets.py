"""User buckets: the memories collection is split into NUM_BUCKETS partitions by a hash of user_id.

Why: milvus-lite 3.x is pure Python and walks every row of every searched segment in Python, so a
user-filtered search costs what the whole collection costs, while the same search restricted to the
user's bucket scans a 64th of it (docs/decisions.md, "User buckets and a small memtable").
Milvus' own partition key (is_partition_key) does not help on milvus-lite: it buckets rows but
never prunes buckets from the filter, and it forbids naming partitions. Manual partitions work the
same on a Milvus server (64 is far below its 1,024-partition default limit).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

NUM_BUCKETS = 64
PROP_BUCKETS = "hippocampus.user_buckets"  # on a companion collection made with buckets (store/xvector.py)


def bucket_of(user_id: str) -> str:
    """The partition holding this user's memories (stable across processes and versions)."""
    return f"u{zlib.crc32(user_id.encode('utf-8')) % NUM_BUCKETS:02d}"


def all_buckets() -> list[str]:
    return [f"u{i:02d}" for i in range(NUM_BUCKETS)]


def group_by_bucket(rows: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """Row indices per bucket, in input order."""
    out: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        out.setdefault(bucket_of(str(row["user_id"])), []).append(i)
    return out


def ensure_bucket(call: Callable[..., Any], collection: str, known: set[str], name: str, create: bool) -> bool:
    """Whether bucket `name` of `collection` exists, made when `create` (under the caller's store lock):
    buckets are made on first write (all 64 up front would slow every new collection), and another process may
    have made one since `known` was filled, so a miss asks Milvus before answering; a lost race to make it
    is not an error. `call(method, *args)`: the store's client call."""
    if name in known:
        return True
    if call("has_partition", collection, name):
        known.add(name)
        return True
    if not create:
        return False
    try:
        call("create_partition", collection, name)
    except Exception:
        if not call("has_partition", collection, name):  # not a lost race: a real failure
            raise
    known.add(name)
    return True
