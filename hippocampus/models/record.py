"""What the store holds: a memory (MemoryRecord, with the one encoder into a row and the decoder that
reads a damaged row without failing) and one event of its history (HistoryEvent)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, Field

from .base import Model
from .clock import now_ts, ts_to_iso
from .kinds import HistoryAction, MemoryType
from .lifecycle import Lifecycle

TEXT_MAX_BYTES = 65535  # the longest memory text, in UTF-8 bytes: Milvus's VARCHAR limit for the text field
_STAMP_MAX = 253_402_300_799  # validation.TS_MAX: the end of year 9999
_DAMAGED: dict[str, set[Any]] = {}  # user_id -> ids of rows read with a damaged stamp; at most 10,000 ids kept


def note_damaged(row: dict[str, Any], key: str) -> None:
    """A row read without its damaged `key`: logged (the id, never the value) the first time it is met."""
    seen = _DAMAGED.setdefault(str(row.get("user_id", "")), set())
    if row.get("id") not in seen and sum(map(len, _DAMAGED.values())) < 10_000:
        seen.add(row.get("id"))
        logging.getLogger(__name__).warning("memory %s has a damaged %s; read without it", row.get("id"), key)


ROW_FIELDS: tuple[str, ...] = ("id", "user_id", "memory_type", "ts", "chat_id", "who", "text", "hit_count", "metadata")
STAMPS = ("created_at", "updated_at")  # a record's own fields, stored inside its metadata
# Caller-settable fields of a verb's request (contract/requests.py) that a memory keeps in its metadata under the
# same name, with what each is: the service copies every one the request has onto the new memory (memory/records.py
# `carried`), so a new one is a field of the request and a line here. Kept in metadata, not a column, so a store
# made before the field opens unchanged; the keys are the library's (validation.OWNED_KEYS): a caller sets them
# through the field, never through `metadata`.
CARRIED: dict[str, str] = {
    "agent_id": "the agent the memory belongs to, set by add's agent_id (store/agents.py; absent: shared)",
    "run_id": "the run the memory was written in, set by add's run_id (store/agents.py)",
}


def carried(request: Any) -> dict[str, Any]:
    """The request's fields a new memory keeps in its metadata under their own names (CARRIED), those given."""
    return {key: getattr(request, key) for key in CARRIED if getattr(request, key, None) is not None}


def damaged_rows(user_id: str | None = None) -> int:
    """Rows (of `user_id`, or of every user) that reads met with a damaged stamp since the process started."""
    return len(_DAMAGED.get(user_id, ())) if user_id is not None else sum(map(len, _DAMAGED.values()))


class MemoryRecord(Model):
    """One memory, episodic or semantic, as stored in the single collection.

    `ts` is when the remembered event happened (seconds since the epoch, UTC);
    `metadata.time` keeps it as ISO 8601 for prompts and people. `created_at` and
    `updated_at` are when this record was written and last changed.
    """

    model_config = ConfigDict(extra="allow")

    id: int
    user_id: str
    memory_type: MemoryType
    ts: int
    chat_id: str
    who: str
    text: str
    hit_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: int | None = None
    updated_at: int | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MemoryRecord:
        """Build from a Milvus row; vectors and search scores are dropped. A damaged stamp of the
        library's (a `created_at` that is not epoch seconds, metadata that is not an object: a row
        an older import let in) reads as missing, so no read of its user fails; the row's id is
        logged once and counted (`damaged_rows`)."""
        data = {k: v for k, v in row.items() if k not in ("vector", "sparse", "_distance")}
        meta = data.get("metadata") or {}
        if not isinstance(meta, dict):
            note_damaged(data, "metadata")
            meta = {}
        data["metadata"] = dict(meta)
        for key in ("created_at", "updated_at"):
            stamp = data.get(key, meta.get(key))
            if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int) or not 0 <= stamp <= _STAMP_MAX):
                note_damaged(data, key)
                stamp = None
            data[key] = stamp
        return cls.model_validate(data)

    def to_row(self, vector: Sequence[float] | None = None, *, with_id: bool = True) -> dict[str, Any]:
        """The one encoder of a record into a store row, used by every writer, so that a new field is
        written here and in store/schema.py, not in each writer: the columns of ROW_FIELDS, the stamps
        `created_at`/`updated_at` inside metadata (where from_row reads them; metadata's own stamp wins,
        as writers stamp metadata), the vector when given; without `with_id` for an insert (the store
        gives the id). Extra attributes a read carried are not columns and are not written."""
        meta = dict(self.metadata)
        for key in STAMPS:
            if getattr(self, key) is not None:
                meta.setdefault(key, getattr(self, key))
        row: dict[str, Any] = {"id": int(self.id), "user_id": self.user_id, "memory_type": self.memory_type.value,
                               "ts": int(self.ts), "chat_id": self.chat_id, "who": self.who, "text": self.text,
                               "hit_count": int(self.hit_count), "metadata": meta}
        if not with_id:
            del row["id"]
        if vector is not None:
            row["vector"] = list(vector)
        return row

    @property
    def time_iso(self) -> str:
        return str(self.metadata.get("time") or ts_to_iso(self.ts))

    @property
    def life(self) -> Lifecycle:
        """Importance, category, state and their times (defaults for a memory written before them)."""
        return Lifecycle.of(self.metadata, self.memory_type)


class HistoryEvent(Model):
    """One change to one memory; kept after the memory itself is gone. `event_id` is the event's own
    id in the store (what `Memory.undo` takes); None on an event not yet stored."""

    event_id: int | None = None
    memory_id: int
    user_id: str
    action: HistoryAction
    old_text: str | None = None
    new_text: str | None = None
    actor: str = "api"
    at: int = Field(default_factory=now_ts)
    details: dict[str, Any] = Field(default_factory=dict)
