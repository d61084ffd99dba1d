"""The history companion collection `<name>_history`: one row per change to a memory (created, updated,
merged, deleted, ...), its event kept as JSON after the memory itself is gone (what `undo` and
`restore` read back). Events get their ids from the store (auto id), so they need no id allocation.
MilvusStore (store/milvus.py) owns it and answers `add_history`, `history`, `history_event` and
`delete_history` through it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from ..models import HistoryAction
from . import filters as F
from .backend import StoreClient
from .capabilities import Capabilities
from .schema import history_schema

PAGE = 1000
_REMOVALS = [HistoryAction.DELETED.value, HistoryAction.FORGOTTEN.value, HistoryAction.MERGED.value]


class HistoryHost(Protocol):
    """What the history collection uses of its MilvusStore, named here so that this module need not
    import the store that imports it."""

    client: StoreClient
    collection: str
    capabilities: Capabilities
    _lock: threading.RLock

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any: ...
    def _create_collection(self, name: str, schema: Any = None, index_params: Any = None, **kwargs: Any) -> None: ...


class HistoryCollection:
    """The events of one memories collection, in their own collection beside it."""

    def __init__(self, host: HistoryHost):
        self.host = host
        self.name = f"{host.collection}_history"

    def ensure(self) -> None:
        """Make the collection when it is missing, else load it (idempotent across processes)."""
        schema, index = history_schema(self.host.client)
        self.host._create_collection(self.name, schema=schema, index_params=index, **self.host.capabilities.create_kwargs())

    def add(self, events: Sequence[dict[str, Any]]) -> list[int]:
        """Store history events; their new event ids, in order (what a failed delete takes back)."""
        if not events:
            return []
        rows = [{"memory_id": int(e["memory_id"]), "user_id": e["user_id"], "action": e["action"], "at": int(e["at"]),
                 "event": {k: v for k, v in e.items() if k != "event_id"}, "_v": [0.0, 0.0]} for e in events]  # ids: the store's
        with self.host._lock:
            return [int(i) for i in self.host._call("insert", self.name, data=rows)["ids"]]

    def by_id(self, event_id: int) -> dict[str, Any] | None:
        """One event by its own id, read by key (a filter on `id` would test every event), or None."""
        with self.host._lock:
            rows = self.host._call("query", self.name, ids=[int(event_id)], output_fields=["id", "event"])
        return {**rows[0]["event"], "event_id": int(rows[0]["id"])} if rows else None

    def read(self, filter_expr: str) -> list[dict[str, Any]]:
        """Events matching the filter, oldest first, each with its own `event_id` (the row's primary key)."""
        with self.host._lock:
            it = self.host._call("query_iterator", self.name, batch_size=PAGE, filter=filter_expr, output_fields=["id", "event"])
        out: list[dict[str, Any]] = []
        try:
            while True:
                with self.host._lock:
                    page = it.next()
                if not page:
                    break
                out.extend(page)
        finally:
            it.close()
        return [{**r["event"], "event_id": int(r["id"])} for r in sorted(out, key=lambda r: (r["event"].get("at", 0), r["id"]))]

    def removed(self, memory_ids: Sequence[int]) -> set[int]:
        """Those of `memory_ids` whose history holds a removal (a delete, a forget, a merge into another
        record). Such an id never comes back (undo and restore bring a row back under a new id), and a
        remover writes its event before it deletes the row (removal.py), so a row found under such an id
        is one that a rewrite put back after another process removed it."""
        if not memory_ids:
            return set()
        found = self.read(F.and_(F.in_("memory_id", sorted({int(i) for i in memory_ids})), F.in_("action", _REMOVALS)))
        return {int(e["memory_id"]) for e in found
                if e["action"] != HistoryAction.MERGED.value or "merged_into" in (e.get("details") or {})}

    def delete(self, filter_expr: str) -> int:
        """Delete the events matching the filter; how many went."""
        with self.host._lock:
            res = self.host._call("delete", self.name, filter=filter_expr)
        return int(res.get("delete_count", 0)) if isinstance(res, dict) else len(res)
