"""What the consolidation job's phases share: the ids in scope by user, the check that records are still
as read, their history events, the size check on a model's text and a record's rewrite in place. They
write through the facade's Writer (store/writes.py), rows built by MemoryRecord.to_row."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..embeddings import Embedder
from ..models import TEXT_MAX_BYTES, HistoryAction, HistoryEvent, MemoryRecord
from ..store import MilvusStore
from ..store.writes import Writer

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


def unchanged(store: MilvusStore, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """The records whose memory is still as read (there, with the same text and updated_at)."""
    ids = [r.id for r in records]
    now = {int(r["id"]): (r["text"], (r.get("metadata") or {}).get("updated_at"))
           for r in store.by_ids(ids, ["id", "text", "metadata"])}
    keep = [r for r in records if now.get(r.id) == (r.text, r.metadata.get("updated_at"))]
    if len(keep) < len(records):
        log.info("%d memories deleted or edited during consolidation; left as they are", len(records) - len(keep))
    return keep


def event(record: MemoryRecord, action: HistoryAction, **kw: Any) -> HistoryEvent:
    """A history event of the consolidation job about `record`."""
    return HistoryEvent(memory_id=record.id, user_id=record.user_id, action=action, actor=ACTOR, **kw)


def fits(text: str | None) -> bool:
    return bool(text and text.strip()) and len(text.encode("utf-8")) <= TEXT_MAX_BYTES


def rewrite(store: MilvusStore, embedder: Embedder, writes: Writer, lock: AbstractContextManager[Any], record: MemoryRecord,
            text: str, metadata: dict[str, Any], action: HistoryAction | None = None, details: dict[str, Any] | None = None) -> None:
    """Rewrite `record` in place through the Writer (its event first, when `action`); a memory deleted
    or edited since it was read is left as it is."""
    if text != record.text:
        vector = embedder.encode([text], role="passage")[0].tolist()
    else:
        vector = store.vectors([record.id]).get(record.id)
        if vector is None:
            return  # deleted meanwhile
    row = record.model_copy(update={"text": text, "metadata": metadata}).to_row(vector)
    events = [event(record, action, old_text=record.text, new_text=text, details=details or {})] if action is not None else []
    with lock:
        writes.rewrite_held([row], [record], events)
