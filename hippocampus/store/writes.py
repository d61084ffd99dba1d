"""The one write path: rows built one way (MemoryRecord.to_row; a new memory's by lifecycle/rows.new_row,
finished there) for add, add_many, consolidation and the lifecycle steps, embedded and inserted with their
creation recorded, rewritten in place (same id) with the old text kept in history.

Memory orchestrates and validates; this module only writes what it is handed, under the write lock
that the facade shares with the consolidation job, so a row and its history event land together:
an insert's events right after its rows (a failure takes the rows back), a rewrite's events first
(a failure takes the events back: removal.take_back)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..embeddings import Embedder
from ..embeddings.base import LOCK_CHUNK
from ..embeddings.turns import FairLock
from ..errors import NotFound
from ..models import HistoryAction, HistoryEvent, MemoryRecord
from . import filters as F
from .milvus import MilvusStore
from .removal import take_back

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)


def revised_row(row: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A stored row (read with its vector) with `changes` to the record's fields (text, metadata,
    hit_count) and, as `vector`, a new vector: decoded and encoded again (MemoryRecord.to_row), so a
    rewrite writes every column the record has."""
    vector = changes.pop("vector", row.get("vector"))
    return MemoryRecord.from_row(row).model_copy(update=changes).to_row(vector)


class Writer:
    """Embeds, writes and records history: for the facade (insert, rewrite, taking the write lock) and
    for the consolidation job (insert_held, rewrite_held: it holds the lock across its checks)."""

    def __init__(self, store: MilvusStore, embedder: Embedder, lock: FairLock | threading.Lock):
        self.store, self.embedder, self.lock = store, embedder, lock

    def insert(self, rows: Sequence[dict[str, Any]], actor: str, action: HistoryAction = HistoryAction.CREATED,
               details: dict[str, Any] | None = None) -> list[int]:
        """Embed (rows without a vector) and insert rows, then record their creation (with `details`); the ids in row order.
        Written in chunks of LOCK_CHUNK rows, each with its events under the write lock, so another tenant's write
        waits for one chunk, not for a whole batch; a failed chunk is taken back, those before it stay."""
        bare = [r for r in rows if "vector" not in r]
        for row, vec in zip(bare, self.embedder.encode([r["text"] for r in bare], role="passage") if bare else []):
            row["vector"] = vec.tolist()
        cross = self.store.cross_vectors(rows)  # embedded outside the lock: another tenant's write need not wait for it
        ids: list[int] = []
        for start in range(0, len(rows), LOCK_CHUNK):  # the lock per chunk, granted in turns (embeddings/turns.py)
            part = rows[start:start + LOCK_CHUNK]
            with self.lock:
                ids += self.insert_held(part, lambda n, i, part=part: [HistoryEvent(
                    memory_id=i, user_id=part[n]["user_id"], action=action, new_text=part[n]["text"], actor=actor,
                    details=dict(details or {}))], None if cross is None else cross[start:start + LOCK_CHUNK])
        return ids

    def insert_held(self, rows: Sequence[dict[str, Any]], events: Callable[[int, int], list[HistoryEvent]],
                    cross_vectors: np.ndarray | None = None) -> list[int]:
        """Insert rows that carry their vectors, then their events (`events(n, id)`: the n-th row's, given its new
        id); the caller holds the write lock. When the events fail, the rows and any of their events that
        landed are taken back (the old state: the ids are new, so every event naming them is this write's)
        and the error raised. `cross_vectors`: the rows' cross-language vectors, when embedded already."""
        if not rows:
            return []
        ids = self.store.insert(rows, cross_vectors)
        try:
            self.store.add_history([e.model_dump(mode="json") for n, i in enumerate(ids) for e in events(n, i)])
        except BaseException:
            try:
                self.store.delete(F.in_("id", ids))
                self.store.delete_history(F.in_("memory_id", ids))
            except Exception:
                log.warning("memories %s were written without their events and could not be taken back", ids, exc_info=True)
            raise
        return ids

    def rewrite(self, old: MemoryRecord, text: str, metadata: dict[str, Any], action: HistoryAction, actor: str,
                details: dict[str, Any] | None = None, **fields: Any) -> MemoryRecord:
        """Upsert a memory in place (same id), re-embedding only when the text changed; `details` go
        into the history event. NotFound when the memory is gone."""
        vector = self.embedder.encode([text], role="passage")[0].tolist() if text != old.text else self.store.vectors([old.id])[old.id]
        row = old.model_copy(update={"text": text, "metadata": metadata, **fields}).to_row(vector)
        event = HistoryEvent(memory_id=old.id, user_id=old.user_id, action=action, actor=actor, old_text=old.text,
                             new_text=text, details=dict(details or {})).model_dump(mode="json")
        with self.lock:  # the event (with the old text) first: a failed rewrite takes it back (removal.py)
            if self._commit([event], [row]):
                raise NotFound(f"memory {old.id} was deleted or merged meanwhile; nothing was rewritten")
        return MemoryRecord.from_row(row)

    def rewrite_held(self, rows: Sequence[dict[str, Any]], read: Sequence[MemoryRecord],
                     events: Sequence[HistoryEvent] = ()) -> set[int]:
        """Rewrite rows in place (each with its vector) and write those of `events` that are about them; the
        caller holds the write lock. A row whose memory is gone, or was edited since `read` (its text or
        updated_at changed: an update through any replica), is skipped with its events: never resurrected,
        the edit stands. The events first (a failed write takes them back). The ids written."""
        was = {r.id: (r.text, r.metadata.get("updated_at")) for r in read}
        for attempt in (1, 2):
            now = {i: (text, meta.get("updated_at")) for i, (text, meta) in self._stored([int(r["id"]) for r in rows]).items()}
            keep = [r for r in rows if int(r["id"]) in now and now[int(r["id"])] == was.get(int(r["id"]), now[int(r["id"])])]
            if len(keep) < len(rows):
                log.info("%d memories deleted or edited meanwhile; left as they are", len(rows) - len(keep))
            if not keep:
                return set()
            ids = {int(r["id"]) for r in keep}
            try:
                return ids - self._commit([e.model_dump(mode="json") for e in events if e.memory_id in ids], keep)
            except NotFound:  # deleted between the check and the write (another process): once more without it
                if attempt == 2:
                    raise
                rows = keep
        return set()

    def _commit(self, events: list[dict[str, Any]], rows: list[dict[str, Any]]) -> set[int]:
        """`events` (dumped), then the rows upserted; when the upsert fails, the events of the memories it
        did not rewrite are taken back (removal.take_back) and the error raised. Returns the ids another
        process removed during the write (MilvusStore.upsert): left removed, their events taken back."""
        written: list[int] | None = None
        try:
            written = self.store.add_history(events) if events else []
            lost = self.store.upsert(rows)
        except BaseException:
            take_back(self.store, events, lambda: self._not_landed(rows), written)
            raise
        if lost:
            take_back(self.store, events, lambda: lost, written)
        return lost

    def _stored(self, ids: list[int]) -> dict[int, tuple[str, dict[str, Any]]]:
        """Each existing memory's (text, metadata) as stored now."""
        rows = self.store.by_ids(ids, ["id", "text", "metadata"])
        return {int(r["id"]): (r["text"], r.get("metadata") or {}) for r in rows}

    def _not_landed(self, rows: list[dict[str, Any]]) -> set[int]:
        """The ids of `rows` the store does not hold as written (gone, or another text or metadata)."""
        now = self._stored([int(r["id"]) for r in rows])
        return {int(r["id"]) for r in rows if now.get(int(r["id"])) != (r["text"], r["metadata"])}

    def history(self, record: MemoryRecord, action: HistoryAction, actor: str, **kw: Any) -> None:
        """One history event for `record` (the caller holds the lock where it must be atomic)."""
        event = HistoryEvent(memory_id=record.id, user_id=record.user_id, action=action, actor=actor, **kw)
        self.store.add_history([event.model_dump(mode="json")])
