"""The facade's write path: rows built one way for add and add_many, embedded and inserted with
their creation recorded, rewritten in place (same id) with the old text kept in history.

Memory orchestrates and validates; this module only writes what it is handed, under the write lock
that the facade shares with the consolidation job, so a row and its history event land together."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from ..config import zone as local_zone
from ..embeddings import Embedder
from ..lifecycle.categories import new_life, with_declared
from ..models import LIFE_KEY, HistoryAction, HistoryEvent, Lifecycle, MemoryRecord, MemoryType, now_ts, ts_to_iso
from ..text.dates import named_day
from . import filters as F
from .milvus import MilvusStore
from .removal import take_back


def new_row(user_id: str, mtype: MemoryType, ts: int, chat_id: str, who: str, text: str, meta: dict[str, Any],
            *, said_ts: int | None = None, tz: tzinfo | None = None) -> dict[str, Any]:
    """A memory row before embedding; `created_at` / `updated_at` and the lifecycle fields
    (category and importance guessed where no model gave them: lifecycle/categories.py) are the library's.

    `said_ts` marks a turn written now (every write path passes it; a restore or compression does not):
    the row then keeps when it was said (`said_at`) and the day it names (`named_date`, in the user's
    zone `tz`), and its importance and todo expiry follow the one rule of lifecycle/when.py, read from
    the turn as said (`source_text`) whatever text the memory keeps."""
    now = now_ts()
    extra: dict[str, Any] = {}
    if said_ts is not None:
        zone = tz or local_zone()
        said_text = str(meta.get("source_text") or text)
        day = named_day(text, int(said_ts), zone) or named_day(said_text, int(said_ts), zone)
        extra = {"said_at": ts_to_iso(int(said_ts))} | ({"named_date": day.isoformat()} if day else {})
        life = meta.get(LIFE_KEY) or new_life(text, mtype, now, int(said_ts), said=said_text, tz=zone).stored()
    else:
        life = meta.get(LIFE_KEY) or new_life(text, mtype, now, int(ts)).stored()
    return {
        "user_id": user_id,
        "memory_type": mtype.value,
        "ts": int(ts),
        "chat_id": chat_id,
        "who": who,
        "text": text,
        "hit_count": 0,
        "metadata": {**meta, **extra, "created_at": meta.get("created_at", now), "updated_at": now, LIFE_KEY: life},
    }


def plain_row(user_id: str, mtype: MemoryType, ts: int, chat_id: str, who: str, text: str, extra: dict[str, Any],
              tz: tzinfo | None = None) -> dict[str, Any]:
    """A turn stored as it is (infer=False): an episode's context/thing/time/chatid/who, a fact's
    fact/source_chatid/first_seen, or a procedure's procedure/source_chatid/first_seen, with the
    caller's metadata on top; said at `ts`, its named day resolved in `tz` (new_row)."""
    if mtype is MemoryType.EPISODIC:
        meta = {"context": "", "thing": text, "time": ts_to_iso(ts), "chatid": chat_id, "who": who, **extra}
    elif mtype is MemoryType.PROCEDURAL:
        meta = {"procedure": text, "source_chatid": chat_id, "first_seen": ts_to_iso(ts), **extra}
    else:
        meta = {"fact": text, "source_chatid": chat_id, "first_seen": ts_to_iso(ts), **extra}
    return new_row(user_id, mtype, ts, chat_id, who, text, meta, said_ts=ts, tz=tz)


class Writer:
    """Embeds, writes and records history for the facade."""

    def __init__(self, store: MilvusStore, embedder: Embedder, lock: threading.Lock, categories: Sequence[Any] = ()):
        self.store, self.embedder, self.lock = store, embedder, lock
        self.categories = tuple(categories)  # the project's own (MemoryConfig.categories): their keywords categorise

    def _declared(self, row: dict[str, Any]) -> None:
        """A project category whose keywords the text holds replaces the built-in category guessed for it
        (lifecycle/categories.with_declared: never one a model or a person gave)."""
        life = Lifecycle.stored_in(row["metadata"])
        if life is None:
            return
        category = with_declared(row["text"], MemoryType(row["memory_type"]), life.category, self.categories)
        if category is not life.category:
            row["metadata"] = {**row["metadata"], LIFE_KEY: life.model_copy(update={"category": category}).stored()}

    def insert(self, rows: Sequence[dict[str, Any]], actor: str, action: HistoryAction = HistoryAction.CREATED,
               details: dict[str, Any] | None = None) -> list[int]:
        """Embed and insert rows, then record their creation (with `details`); the ids in row order."""
        for row in rows if self.categories else ():
            self._declared(row)
        vectors = self.embedder.encode([r["text"] for r in rows], role="passage")
        for row, vec in zip(rows, vectors):
            row["vector"] = vec.tolist()
        with self.lock:
            ids = self.store.insert(rows)
            self.store.add_history(
                [
                    HistoryEvent(memory_id=i, user_id=r["user_id"], action=action, new_text=r["text"], actor=actor,
                                 details=dict(details or {})).model_dump(mode="json")
                    for i, r in zip(ids, rows)
                ]
            )
        return ids

    def rewrite(self, old: MemoryRecord, text: str, metadata: dict[str, Any], action: HistoryAction, actor: str,
                details: dict[str, Any] | None = None, **fields: Any) -> MemoryRecord:
        """Upsert a memory in place (same id), re-embedding only when the text changed; `details` go
        into the history event."""
        vector = self.embedder.encode([text], role="passage")[0].tolist() if text != old.text else self.store.vectors([old.id])[old.id]
        row = {
            "id": old.id,
            "user_id": old.user_id,
            "memory_type": old.memory_type.value,
            "ts": old.ts,
            "chat_id": old.chat_id,
            "who": old.who,
            "text": text,
            "hit_count": old.hit_count,
            "metadata": metadata,
            "vector": vector,
            **fields,
        }
        event = HistoryEvent(memory_id=old.id, user_id=old.user_id, action=action, actor=actor, old_text=old.text,
                             new_text=text, details=dict(details or {})).model_dump(mode="json")
        with self.lock:  # the event (with the old text) first: a failed rewrite takes it back (removal.py)
            written: list[int] | None = None
            try:
                written = self.store.add_history([event])
                self.store.upsert([row])
            except BaseException:
                take_back(self.store, [event], lambda: self._unchanged(old), written)
                raise
        return MemoryRecord.from_row(row)

    def _unchanged(self, old: MemoryRecord) -> set[int]:
        """{old.id} when the rewrite did not land: the row still holds `old`'s text and metadata, or it is
        gone (upsert refuses a row deleted meanwhile); else nothing."""
        rows = self.store.query(F.eq("id", old.id), ["id", "text", "metadata"], limit=1)
        return {old.id} if not rows or (rows[0]["text"] == old.text and rows[0]["metadata"] == old.metadata) else set()

    def history(self, record: MemoryRecord, action: HistoryAction, actor: str, **kw: Any) -> None:
        """One history event for `record` (the caller holds the lock where it must be atomic)."""
        event = HistoryEvent(memory_id=record.id, user_id=record.user_id, action=action, actor=actor, **kw)
        self.store.add_history([event.model_dump(mode="json")])
