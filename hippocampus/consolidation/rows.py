"""What the consolidation job and its distillation share: the ids in scope by user, a row rebuilt
for an upsert, the size check on a model's text, and an upsert that never resurrects a deleted row."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import NotFound
from ..models import TEXT_MAX_BYTES, HistoryAction, HistoryEvent, MemoryRecord
from ..store import MilvusStore
from ..store import filters as F

log = logging.getLogger(__name__)
ACTOR = "consolidation"


def ids_by_user(store: MilvusStore, scope: str, skip: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, list[int]]:
    """One paged scan: the ids in scope grouped by user (so each batched search has one user filter)."""
    fields = ["id", "user_id", "metadata"] if skip else ["id", "user_id"]
    out: dict[str, list[int]] = {}
    for page in store.iterate(scope, fields):
        for row in page:
            if skip is None or not skip(row):
                out.setdefault(row["user_id"], []).append(int(row["id"]))
    for ids in out.values():
        ids.sort()
    return out


def rewrite_alive(store: MilvusStore, rows: list[dict[str, Any]], read: Sequence[MemoryRecord] = ()) -> set[int]:
    """Upsert rows in place; rows deleted meanwhile (a delete racing this run) are skipped, never resurrected.
    With `read` (the records the rows were built from), rows whose memory was edited since (its text or
    updated_at changed: an update through any replica while this run worked) are skipped too: the edit
    stands, and the next run sees it. The written ids."""
    rows = _unchanged(store, rows, read) if read else rows
    if not rows:
        return set()
    try:
        store.upsert(rows)
        return {int(r["id"]) for r in rows}
    except NotFound:
        alive = set(store.vectors([int(r["id"]) for r in rows]))
        keep = [r for r in rows if int(r["id"]) in alive]
        log.info("%d memories vanished during consolidation; not rewritten", len(rows) - len(keep))
        if keep:
            store.upsert(keep)
        return {int(r["id"]) for r in keep}


def unchanged(store: MilvusStore, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """The records whose memory is still as read (the same text and updated_at)."""
    rows = [{"id": r.id} for r in records]
    kept = {int(r["id"]) for r in _unchanged(store, rows, records)}
    return [r for r in records if r.id in kept]


def _unchanged(store: MilvusStore, rows: list[dict[str, Any]], read: Sequence[MemoryRecord]) -> list[dict[str, Any]]:
    was = {r.id: (r.text, r.metadata.get("updated_at")) for r in read}
    ids = [int(r["id"]) for r in rows]
    now = {int(r["id"]): (r["text"], (r.get("metadata") or {}).get("updated_at"))
           for r in store.query(F.in_("id", ids), ["id", "text", "metadata"], limit=max(1, len(ids)))}
    keep = [r for r in rows if int(r["id"]) not in was or now.get(int(r["id"]), was[int(r["id"])]) == was[int(r["id"])]]
    if len(keep) < len(rows):
        log.info("%d memories edited during consolidation; left as edited", len(rows) - len(keep))
    return keep


def event(record: MemoryRecord, action: HistoryAction, **kw: Any) -> HistoryEvent:
    """A history event of the consolidation job about `record`."""
    return HistoryEvent(memory_id=record.id, user_id=record.user_id, action=action, actor=ACTOR, **kw)


def add_history(store: MilvusStore, events: Sequence[HistoryEvent]) -> None:
    store.add_history([e.model_dump(mode="json") for e in events])


def row_of(record: MemoryRecord, text: str, metadata: dict[str, Any], vector: Sequence[float]) -> dict[str, Any]:
    return {
        "id": record.id, "user_id": record.user_id, "memory_type": record.memory_type.value, "ts": record.ts,
        "chat_id": record.chat_id, "who": record.who, "text": text, "hit_count": record.hit_count,
        "metadata": metadata, "vector": list(vector),
    }


def fits(text: str | None) -> bool:
    return bool(text and text.strip()) and len(text.encode("utf-8")) <= TEXT_MAX_BYTES
