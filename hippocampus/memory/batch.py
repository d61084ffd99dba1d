"""The batch verbs, `update_many` and `delete_many`: up to MAX_BATCH items per call, a result per item.

Both check the whole call first: a malformed item (or more than MAX_BATCH) refuses the call with one
InvalidInput naming the item, and nothing changes. Then:

- update_many applies item by item through the single `update` (memory/records.py: the same
  validation, re-embedding and "updated" history event, so `undo` reverses one item). Each item is
  reported: ok, not_found (missing or another user's: the 404 rule), unchanged (same text and
  metadata: nothing written), invalid (refused by `update` itself, e.g. metadata that would grow past
  the limit) or failed (the store or the embedder failed on that item; the items before it stay
  updated and the next ones are still tried: not all-or-nothing).
- delete_many removes every deletable memory in one step through the single delete's removal
  (history event first, then the rows: store/removal.py), so a store failure deletes none of them
  and raises, exactly as `delete` does. Core and system memories are never deleted by a batch
  (reported invalid); missing or other users' ids are not_found.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from .. import validation as V
from ..context import MemoryContext
from ..contract.replies import BatchDeleteResult, BatchItem, BatchUpdateResult
from ..contract.requests import UpdateRequest, build
from ..errors import EmbeddingError, InvalidInput, NotFound, StoreError
from ..lifecycle import expiry
from ..lifecycle.policy import PERMANENT
from ..lifecycle.when import user_zone
from ..models import MemoryRecord, now_ts
from ..store import MEMORY_FIELDS
from ..store import filters as F
from ..store.removal import remove_with_history
from .browse import parse_ids
from .records import RecordService, deletion_event, unchanged

MAX_BATCH = 1000
ITEM_KEYS = ("memory_id", "text", "metadata", "expires_at")


def check_size(items: Any, what: str) -> list[Any]:
    """The batch as a list, at most MAX_BATCH long. Raises InvalidInput before any work."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Sequence):
        raise InvalidInput(f"{what} must be a list, got {type(items).__name__}")
    if len(items) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} {what} per call, got {len(items)}; split the batch")
    return list(items)


Item = tuple[int, str, dict[str, Any], int | None]  # memory_id, text, metadata, expiry (epoch seconds) or None


def check_update_items(items: Any, tz: tzinfo) -> list[Item]:
    """Every item of update_many checked: (memory_id, text, metadata, expiry resolved from now in `tz`).
    Raises InvalidInput naming the first bad item (and nothing has changed)."""
    checked: list[Item] = []
    now = now_ts()
    seen: dict[int, int] = {}
    for n, item in enumerate(check_size(items, "items")):
        try:
            if not isinstance(item, dict):
                raise InvalidInput(f"must be an object with memory_id and text, got {type(item).__name__}")
            unknown = sorted(str(k) for k in item if k not in ITEM_KEYS)
            if unknown:
                raise InvalidInput(f"unknown key {unknown[0]!r}; an item takes {', '.join(ITEM_KEYS)}")
            memory_id = V.check_memory_id(item.get("memory_id"))
            text = V.check_text(item.get("text"))
            metadata = V.check_caller_metadata(item.get("metadata"))
            until = expiry.resolve(item.get("expires_at"), now, tz)  # as `update` resolves it: words count from now
        except InvalidInput as exc:
            raise InvalidInput(f"items[{n}]: {exc}; nothing was changed") from None
        if memory_id in seen:
            raise InvalidInput(f"items[{n}]: memory {memory_id} is also items[{seen[memory_id]}]; "
                               "give each memory once; nothing was changed")
        seen[memory_id] = n
        checked.append((memory_id, text, metadata, until))
    return checked


class BatchService:
    """update_many and delete_many over a MemoryContext, each item through the record service's own path."""

    def __init__(self, ctx: MemoryContext, records: RecordService):
        self.ctx, self.records = ctx, records

    def _found(self, ids: list[int], user_id: str) -> dict[int, MemoryRecord]:
        """This user's memories among `ids` (another user's are simply absent)."""
        if not ids:
            return {}
        rows = self.ctx.store.by_ids(ids, MEMORY_FIELDS, where=F.eq("user_id", user_id))
        return {int(r["id"]): MemoryRecord.from_row(r) for r in rows}

    def update_many(self, items: Sequence[dict[str, Any]], user_id: str) -> BatchUpdateResult:
        """Update each memory as `update` does, reporting each. Memory.update_many documents the
        arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        checked = check_update_items(items, user_zone(self.ctx.config, user_id))
        found = self._found([item[0] for item in checked], user_id)
        out = BatchUpdateResult()
        for memory_id, text, metadata, until in checked:
            old = found.get(memory_id)
            if old is None:
                out.results.append(BatchItem(id=memory_id, status="not_found", error=f"memory {memory_id} not found for this user"))
                continue
            if unchanged(old, text, metadata, until):
                out.results.append(BatchItem(id=memory_id, status="unchanged"))
                continue
            try:
                self.records.update(build(UpdateRequest, memory_id=memory_id, text=text, user_id=user_id,
                                          metadata=metadata or None, expires_at=until))
            except NotFound as exc:  # deleted since the check above
                out.results.append(BatchItem(id=memory_id, status="not_found", error=str(exc)))
            except InvalidInput as exc:
                out.results.append(BatchItem(id=memory_id, status="invalid", error=str(exc)))
            except (StoreError, EmbeddingError) as exc:
                out.results.append(BatchItem(id=memory_id, status="failed", error=f"{type(exc).__name__}: {exc}"))
            else:
                out.results.append(BatchItem(id=memory_id, status="ok"))
        return out

    def renew_expiry(self, expiries: dict[Any, Any], user_id: str) -> list[int]:
        """Move each memory's expiry, {memory_id: expires_at}: the rows of this user's memories rewritten in one
        store write, no re-embedding and no history event (a lease renewed by a read is not a change of
        what the memory says). Memory.renew_expiry documents the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        if not isinstance(expiries, dict):
            raise InvalidInput(f"expiries must be a dict {{memory_id: expires_at}}, got {type(expiries).__name__}")
        check_size(list(expiries), "memories")
        now, tz = now_ts(), user_zone(self.ctx.config, user_id)
        until = {V.check_memory_id(i): expiry.resolve(at, now, tz) for i, at in expiries.items()}
        if any(at is None for at in until.values()):
            raise InvalidInput("every memory needs an expires_at; nothing was changed")
        if not until:
            return []
        with self.ctx.write_lock:
            rows = self.ctx.store.by_ids(list(until), [*MEMORY_FIELDS, "vector"], where=F.eq("user_id", user_id))
            rewritten = [{**{k: v for k, v in r.items() if k != "sparse"},
                          "metadata": expiry.stamp(dict(r.get("metadata") or {}), until[int(r["id"])])} for r in rows]
            lost = self.ctx.store.upsert(rewritten) if rewritten else set()
        return sorted(int(r["id"]) for r in rewritten if int(r["id"]) not in lost)

    def delete_many(self, memory_ids: Sequence[Any], user_id: str) -> BatchDeleteResult:
        """Delete these memories of this user (history kept, as `delete`). Memory.delete_many documents
        the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        if isinstance(memory_ids, (str, bytes)):
            memory_ids = parse_ids(memory_ids if isinstance(memory_ids, str) else memory_ids.decode())
        ids = list(dict.fromkeys(V.check_memory_id(i) for i in check_size(memory_ids, "memory_ids")))
        out = BatchDeleteResult()
        if not ids:
            return out
        with self.ctx.write_lock:  # looked up and removed under one lock: a racing delete has won or not started
            found = self._found(ids, user_id)
            gone = [i for i in ids if i in found and found[i].life.category not in PERMANENT]
            if gone:  # the events first, then the rows (removal.py): never a row gone without its event
                events = [deletion_event(found[i], user_id, batch=True) for i in gone]
                remove_with_history(self.ctx.store, events, F.and_(F.in_("id", gone), F.eq("user_id", user_id)), gone)
        for i in ids:
            if i not in found:
                out.not_found.append(i)
                out.results.append(BatchItem(id=i, status="not_found", error=f"memory {i} not found for this user"))
            elif i in gone:
                out.deleted.append(i)
                out.results.append(BatchItem(id=i, status="ok"))
            else:
                out.skipped_core.append(i)
                out.results.append(BatchItem(id=i, status="invalid", error=f"memory {i} is a {found[i].life.category.value} "
                                             "memory: never deleted in a batch; curate it first or delete it on its own"))
        return out
