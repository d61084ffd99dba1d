"""Removing memories so that no row is ever gone without the history event that keeps it.

Every destructive path (delete, delete_many, a merge's sources, decay's forget) writes its history
events first and deletes the rows second. When the delete raises, the events of the rows that are
still there are taken back, so each row ends in one of two states: still there with no event (the
old state), or gone with its event (the new state, which `undo` reverses). A crash between the two
steps leaves a row and an event that names it; `bring_back` refuses to duplicate a row that still
exists, so such an event can never make a second copy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from . import filters as F
from .milvus import MilvusStore

log = logging.getLogger(__name__)


def remove_with_history(store: MilvusStore, events: Sequence[dict[str, Any]], rows_filter: str,
                        memory_ids: Sequence[int]) -> int:
    """Write `events` (history, already dumped as JSON), then delete the rows `rows_filter` selects
    (`memory_ids`, for the check after a failure). Returns how many rows went. The caller holds the
    write lock. Raises what the store raised, after taking back the events of rows still present."""
    written: list[int] | None = None
    try:
        written = store.add_history(list(events)) if events else []
        return store.delete(rows_filter)
    except BaseException:
        take_back(store, events, lambda: set(store.vectors(list(memory_ids))), written)
        raise


def take_back(store: MilvusStore, events: Sequence[dict[str, Any]], unchanged: Callable[[], set[int]],
              written: Sequence[int] | None = None) -> None:
    """After a failed change: drop those of `events` (their ids `written`, in order; None when the write
    raised, perhaps after it landed: then each is looked up by its content) whose memory `unchanged()`
    names (still in the old state); the others keep theirs (the new state). On a second failure the
    events stay: an event for a row that still exists is harmless (undo refuses to bring back a row
    that exists). Never raises."""
    if not events or written == []:
        return
    try:
        alive = unchanged()
        ours = [e for e in events if int(e["memory_id"]) in alive]
        if not ours:
            return
        if written is not None:
            drop = [i for i, e in zip(written, events) if int(e["memory_id"]) in alive]
        else:
            found = store.history(F.in_("memory_id", sorted({int(e["memory_id"]) for e in ours})))
            drop = []
            for event in ours:  # the newest stored event equal to ours (it was written last)
                same = [int(f["event_id"]) for f in found if _content(f) == _content(event)]
                if same and max(same) not in drop:
                    drop.append(max(same))
        if drop:
            store.delete_history(F.in_("id", drop))
    except Exception:  # the store failed twice: keep the events, they name rows that undo will not duplicate
        log.warning("a failed change's history events could not be taken back", exc_info=True)


def _content(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != "event_id"}
