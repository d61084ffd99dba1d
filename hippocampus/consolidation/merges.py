"""A merge of two episodes, written so that a crash at any point loses nothing, and the recovery that
finishes one a crash interrupted.

The merged record is written first, flagged `merge_pending` and listing `merged_from_ids`, with its
MERGED event; only then are the sources deleted (each source's row kept in its MERGED event, so that
`undo` can bring it back) and the flag cleared. A run starts by finishing any merge still flagged, so
a re-run converges without duplicates. Idempotent across replicas: the merged row's `merge_key`
(merged_row.merge_key) names its sources, and a merge already written is not written again; the run's
lease check (`fence`, store/leases.py) comes right before each destructive step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ..embeddings import Embedder
from ..lifecycle.decay import forgotten_row
from ..models import HistoryAction, HistoryEvent, MemoryRecord, now_ts
from ..store import MilvusStore
from ..store import filters as F
from ..store.leases import LeaseLost
from ..store.removal import remove_with_history
from ..store.writes import Writer
from .merged_row import build_merged_row
from .rows import ACTOR, rewrite, unchanged

log = logging.getLogger(__name__)


class Merges:
    """The merge writes of one consolidation job: what they need is the constructor (the job hands over
    its store, embedder, Writer, write lock, lease check and crash-test checkpoint)."""

    def __init__(self, store: MilvusStore, embedder: Embedder, writes: Writer, lock: AbstractContextManager[Any],
                 fence: Callable[[], None], checkpoint: Callable[[str], None]):
        self.store, self.embedder, self.writes, self._lock = store, embedder, writes, lock
        self.fence, self.checkpoint = fence, checkpoint

    def finish_interrupted(self, scope: str) -> None:
        """Merged records still flagged merge_pending: delete their sources (if any are left), clear the flag."""
        for row in self.store.query(F.and_(scope, F.json_eq("metadata", "merge_pending", True))):
            merged = MemoryRecord.from_row(row)
            self._log_creation(merged)
            self._delete_sources(merged, [int(i) for i in merged.metadata.get("merged_from_ids") or []], recovering=True)
            self._clear_pending_flag(merged)

    def write(self, a: MemoryRecord, b: MemoryRecord, text: str, context: str, thing: str, details: dict[str, Any]) -> bool:
        """Write the merged record first (flagged merge_pending), then delete the sources, then clear the flag.
        False, and nothing written, when a source was deleted or edited meanwhile or the merge is written already."""
        row = build_merged_row(a, b, text, context, thing, now_ts())
        row["vector"] = self.embedder.encode([text], role="passage")[0].tolist()
        with self._lock:
            if len(self.store.vectors([a.id, b.id])) < 2:
                return False  # a source was deleted meanwhile: never bring its content back
            if len(unchanged(self.store, [a, b])) < 2:
                return False  # a source was edited meanwhile (any replica): the merge judged the old text
            key = row["metadata"]["merge_key"]  # merged_row.merge_key: the same sources, the same key
            if self.store.query(F.and_(F.eq("user_id", a.user_id), F.json_eq("metadata", "merge_key", key)), ["id"], limit=1):
                return False  # this merge was written already (another replica, a retry): the recovery finishes it
            self.fence()
            new_id: int | None = None
            try:  # the merged record and its MERGED event (store/writes.py: a failed event takes the record back)
                new_id = self.writes.insert_held([row], lambda _, i: [HistoryEvent(
                    memory_id=i, user_id=a.user_id, action=HistoryAction.MERGED, new_text=text, actor=ACTOR,
                    details={"merged_from_ids": [a.id, b.id], **details})])[0]
            except LeaseLost:
                raise
            except BaseException:
                self._abandon(a.user_id, new_id, [a.id, b.id], locked=True)
                raise
        self.checkpoint("merge_inserted")
        merged = MemoryRecord.from_row({**row, "id": new_id})
        try:
            self._delete_sources(merged, [a.id, b.id])
        except LeaseLost:  # another replica holds the user now: it finishes this merge (merge_pending); never undo it
            raise
        except BaseException:
            self._abandon(a.user_id, new_id, [a.id, b.id])
            raise
        self._clear_pending_flag(merged)  # a failure here leaves the flag for the next run's recovery to clear
        return True

    def _delete_sources(self, merged: MemoryRecord, source_ids: Sequence[int], recovering: bool = False) -> None:
        """Each source's MERGED event (its row kept, so that Memory.undo can bring it back), then the
        sources themselves (removal.py); on recovery, sources whose event a crash left are not logged twice."""
        with self._lock:
            # primary-key look-up (fast), then the tenant check on the rows themselves
            rows = self.store.by_ids(source_ids)
            sources = [MemoryRecord.from_row(r) for r in rows if r["user_id"] == merged.user_id]
            if sources:
                logged = self._logged_sources(merged, [s.id for s in sources]) if recovering else set()
                events = [HistoryEvent(memory_id=s.id, user_id=s.user_id, action=HistoryAction.MERGED, old_text=s.text,
                                       new_text=merged.text, actor=ACTOR, details={"merged_into": merged.id, "row": forgotten_row(s)})
                          for s in sources if s.id not in logged]
                ids = [s.id for s in sources]
                self.fence()
                remove_with_history(self.store, [e.model_dump(mode="json") for e in events], F.in_("id", ids), ids)
        self.checkpoint("merge_sources_deleted")

    def _log_creation(self, merged: MemoryRecord) -> None:
        """The merged record's own MERGED event, when a crash came between its insert and that event."""
        events = self.store.history(F.and_(F.eq("memory_id", merged.id), F.eq("action", HistoryAction.MERGED.value)))
        if not any("merged_from_ids" in (e.get("details") or {}) for e in events):
            self.writes.history(merged, HistoryAction.MERGED, ACTOR, new_text=merged.text,
                                details={"merged_from_ids": merged.metadata.get("merged_from_ids") or []})

    def _logged_sources(self, merged: MemoryRecord, ids: list[int]) -> set[int]:
        """Sources that already have their MERGED event into `merged` (a crash came between it and the delete)."""
        events = self.store.history(F.and_(F.in_("memory_id", ids), F.eq("user_id", merged.user_id),
                                           F.eq("action", HistoryAction.MERGED.value)))
        return {int(e["memory_id"]) for e in events if (e.get("details") or {}).get("merged_into") == merged.id}

    def _clear_pending_flag(self, merged: MemoryRecord) -> None:
        meta = {k: v for k, v in merged.metadata.items() if k != "merge_pending"}
        rewrite(self.store, self.embedder, self.writes, self._lock, merged, merged.text, meta)

    def _abandon(self, user_id: str, new_id: int | None, source_ids: list[int], locked: bool = False) -> None:
        """A merge that failed before its sources went: remove the merged record (found by its sources
        when the insert raised after it landed) and its events, so the old state stands. When a source
        is gone already the merge stays, flagged `merge_pending`, and the next run finishes it.
        Never raises: the first error is the one to see."""
        try:
            with nullcontext() if locked else self._lock:
                if len(self.store.vectors(source_ids)) < len(source_ids):
                    return
                pending = self.store.query(F.and_(F.eq("user_id", user_id), F.json_eq("metadata", "merge_pending", True)))
                ids = {int(r["id"]) for r in pending if sorted((r.get("metadata") or {}).get("merged_from_ids") or []) == sorted(source_ids)}
                ids |= {new_id} if new_id is not None else set()
                if ids:
                    self.fence()
                    self.store.delete(F.in_("id", sorted(ids)))
                    self.store.delete_history(F.in_("memory_id", sorted(ids)))
        except Exception:
            log.warning("merge of %s failed and could not be rolled back; the next run finishes it", source_ids, exc_info=True)
