"""Bringing a removed memory back from the row its history event kept (lifecycle/decay.forgotten_row):
`restore` after a forget, and `undo` of a delete, a forget or a merge (memory/undo.py)."""

from __future__ import annotations

from typing import Any

from ..embeddings import Embedder
from ..errors import InvalidInput
from ..models import LIFE_KEY, HistoryAction, HistoryEvent, Lifecycle, MemoryType, State, now_ts
from ..store import MilvusStore
from ..store import filters as F
from .rows import new_row


def revived(saved: dict[str, Any]) -> dict[str, Any]:
    """The metadata of a forgotten row brought back: active again, its score at least 0.5 from now
    (so that the next decay pass does not take it at once)."""
    meta = dict(saved.get("metadata") or {})
    life = Lifecycle.of(meta, MemoryType(saved["memory_type"]))
    meta[LIFE_KEY] = life.model_copy(update={"importance": max(life.importance, 0.5), "state": State.ACTIVE,
                                             "last_activated": now_ts()}).stored()
    return meta


def bring_back(store: MilvusStore, embedder: Embedder, saved: dict[str, Any], old_id: int, user_id: str,
               metadata: dict[str, Any], actor: str, details: dict[str, Any] | None = None, vector: list[float] | None = None) -> int:
    """Insert again a row that a history event kept (forgotten_row: a forget, a delete, a merge's
    source) with `metadata`: re-embedded (unless `vector` is given), the same text, type, times, chat,
    who and hit count under a new id, recorded both ways ("restored": restored_from on the new id,
    restored_as on the old one, each with `details`). The new id. The caller holds the write lock."""
    if store.by_ids([int(old_id)], ["id"], where=F.eq("user_id", user_id)):
        raise InvalidInput(f"memory {old_id} still exists (its removal did not finish); nothing to bring back")
    row = new_row(user_id, MemoryType(saved["memory_type"]), int(saved["ts"]), saved["chat_id"], saved["who"], saved["text"], metadata,
                  hit_count=int(saved.get("hit_count") or 0))
    row["vector"] = vector if vector is not None else embedder.encode([row["text"]], role="passage")[0].tolist()
    new_id = store.insert([row])[0]
    store.add_history([HistoryEvent(memory_id=i, user_id=user_id, action=HistoryAction.RESTORED, new_text=row["text"], actor=actor,
                                    details={**(details or {}), key: other}).model_dump(mode="json")
                       for i, key, other in ((new_id, "restored_from", old_id), (old_id, "restored_as", new_id))])
    return new_id
