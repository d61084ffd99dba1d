"""The undo service (docs/aging.md): `Memory.undo(event_id, user_id)` delegates here to
put back the state from before one history event.

What each action's undo does:

- created: the memory is deleted (its row kept in the "deleted" event, as a delete keeps it);
- updated, reconsolidated, separated: the old text back (and, for a curate, the old category,
  importance and state), the same id, re-embedded;
- deleted, forgotten (the event keeps the row): the row is inserted again, under a new id, recorded
  both ways in history ("restored"); a forget comes back as `restore` brings it (active, score at
  least 0.5 from now, so that the next decay pass does not take it again), a delete exactly as it was;
- merged: the merged record is removed and both sources come back (new ids, recorded in history);
- archived: active again; promoted: the category from before; superseded: valid again (`valid_to`
  and `superseded_by` cleared, the halved score doubled back); compressed: the source active again,
  the compressed fact kept.

Hits, reviews, distillations, restores, reactivations, decay runs, the creation of a compressed fact
(undo its sources' "compressed" events) and undos themselves are refused, as is an event whose memory
changed after it (any later event but a use: the refusal names it, undo it first; memory/undo_later.py),
one undone already, or one that kept no copy of a row it removed (written before undo existed).
Facts distilled from a memory after the event follow it when the undo changes what the memory says
(deleted, their rows kept in history; the memory is distilled again), or the refusal says why not.
Every undo writes its own history events: actor "undo", details {"undo_of": event_id}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import validation as V
from ..context import MemoryContext
from ..errors import InvalidInput, NotFound
from ..lifecycle.compress import FROM, INTO
from ..lifecycle.decay import forgotten_row
from ..lifecycle.restore import bring_back, revived
from ..models import LIFE_KEY, Category, HistoryAction, HistoryEvent, Lifecycle, MemoryRecord, State, UndoResult, now_ts
from ..store import MEMORY_FIELDS
from ..store import filters as F
from ..store.removal import remove_with_history
from ..store.writes import revised_row
from .undo_later import Later, check_later, unmarked

ACTOR = "undo"
A = HistoryAction
REFUSED = {  # what cannot be undone, and why
    A.HIT: "a hit cannot be undone",
    A.REACTIVATED: "a reactivation cannot be undone (it is part of a hit)",
    A.REVIEWED: "a review cannot be undone",
    A.DISTILLED: "a distillation cannot be undone (delete the facts it made, or undo their creation)",
    A.RESTORED: "a restore cannot be undone (delete the restored memory instead)",
    A.DECAY_RUN: "a decay run cannot be undone",
}


def check_event_id(value: Any) -> int:
    """A history event id: an integer in 0 .. 2**63 - 1 (digits in a string are accepted)."""
    return V.check_memory_id(value, "event_id")


def _saved(event: HistoryEvent) -> dict[str, Any] | None:
    """The row a removal event kept (forgotten_row), when it is whole enough to insert again."""
    row = event.details.get("row")
    if not isinstance(row, dict) or row.get("memory_type") not in ("episodic", "semantic") or not isinstance(row.get("ts"), int):
        return None
    if not all(isinstance(row.get(k), str) and row.get(k) for k in ("chat_id", "who", "text")):
        return None
    return row if isinstance(row.get("metadata", {}), dict) else None


def _eid(event: HistoryEvent) -> int:
    return int(event.event_id or 0)  # always set on an event read from the store


def _value(v: Any) -> Any:
    return getattr(v, "value", v)


class UndoService:
    """The undo verb over a MemoryContext (its store, embedder and write lock)."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def undo(self, event_id: int, user_id: str) -> UndoResult:
        """Put back the state from before one history event of this user (`event_id`, as `history` lists it).
        Memory.undo documents the arguments and errors."""
        event_id = check_event_id(event_id)
        user_id = V.check_id("user_id", user_id)
        with self.ctx.write_lock:  # read, check and write together: two undos of one event cannot both succeed
            raw = self.ctx.store.history_event(event_id)
            if raw is None or raw.get("user_id") != user_id:
                raise NotFound(f"no history event {event_id} for this user")
            event = HistoryEvent.model_validate(raw)
            if event.actor == ACTOR or "undo_of" in event.details:
                raise InvalidInput(f"event {event_id} is itself an undo; it cannot be undone")
            if event.action in REFUSED:
                raise InvalidInput(f"{REFUSED[event.action]}; event {event_id} left as it is")
            if event.action is A.MERGED:
                return self._undo_merge(event)
            self._not_undone([event_id], [event.memory_id], user_id)
            if event.action in (A.DELETED, A.FORGOTTEN):  # the row is gone: nothing later can touch it
                return _HANDLERS[event.action](self, event)
            later = check_later(self.ctx.store, event, event.memory_id, follow=event.action in _SAYS)
            if event.action in _TEXT:
                result = self._undo_text(event, later)
            else:
                result = _HANDLERS[event.action](self, event)
            return self._follow(event, result, later)

    def _follow(self, event: HistoryEvent, result: UndoResult, later: Later) -> UndoResult:
        """Remove the facts distilled from what the memory said before its undo (check_later found them untouched)."""
        if not later.facts:
            return result
        for fact in later.facts:
            self._remove(event, fact)
        removed = [f.id for f in later.facts]
        return result.model_copy(update={"removed_ids": [*result.removed_ids, *removed],
                                         "message": f"{result.message}; the facts distilled from it since, {removed}, follow it (deleted)"})

    # ------------------------------------------------------------------ checks (the write lock is held)
    def _not_undone(self, event_ids: list[int], memory_ids: list[int], user_id: str) -> None:
        for e in self.ctx.store.history(F.and_(F.in_("memory_id", memory_ids), F.eq("user_id", user_id))):
            if e.get("details", {}).get("undo_of") in event_ids:
                raise InvalidInput(f"event {event_ids[0]} was undone already (event {e['event_id']})")

    def _alive(self, event: HistoryEvent, memory_id: int | None = None) -> dict[str, Any]:
        """The memory's row (with its vector) as it is now; InvalidInput when it is gone."""
        mid = event.memory_id if memory_id is None else memory_id
        rows = self.ctx.store.by_ids([mid], [*MEMORY_FIELDS, "vector"], where=F.eq("user_id", event.user_id))
        if not rows:
            raise InvalidInput(f"memory {mid} no longer exists; undo the later event first")
        return rows[0]

    @staticmethod
    def _changed(event: HistoryEvent, memory_id: int | None = None) -> InvalidInput:
        mid = event.memory_id if memory_id is None else memory_id
        return InvalidInput(f"memory {mid} changed after this event; undo the later event first")

    # ------------------------------------------------------------------ writes (the write lock is held)
    def _put(self, row: dict[str, Any], text: str, metadata: dict[str, Any]) -> None:
        vector = row["vector"] if text == row["text"] else self.ctx.embedder.encode([text], role="passage")[0].tolist()
        self.ctx.store.upsert([revised_row(row, text=text, metadata=metadata, vector=vector)])

    def _log(self, event: HistoryEvent, memory_id: int, action: HistoryAction, **kw: Any) -> None:
        details = {"undo_of": event.event_id, **kw.pop("details", {})}
        self.ctx.store.add_history([HistoryEvent(memory_id=memory_id, user_id=event.user_id, action=action, actor=ACTOR,
                                             details=details, **kw).model_dump(mode="json")])

    def _remove(self, event: HistoryEvent, rec: MemoryRecord) -> None:
        """Delete `rec`, its "deleted" event (the row kept) written first (removal.py)."""
        done = HistoryEvent(memory_id=rec.id, user_id=rec.user_id, action=A.DELETED, actor=ACTOR, old_text=rec.text,
                            details={"undo_of": event.event_id, "row": forgotten_row(rec)})
        remove_with_history(self.ctx.store, [done.model_dump(mode="json")], F.and_(F.eq("id", rec.id), F.eq("user_id", rec.user_id)), [rec.id])

    def _with_life(self, event: HistoryEvent, row: dict[str, Any], update: dict[str, Any], message: str,
                   meta_extra: Callable[[dict[str, Any]], None] | None = None) -> UndoResult:
        """Rewrite the lifecycle fields of a memory (same id, same text) and record it."""
        rec = MemoryRecord.from_row(row)
        old = rec.life
        new = Lifecycle.model_validate({**old.stored(), **{k: _value(v) for k, v in update.items()}})
        meta = {**rec.metadata, LIFE_KEY: new.stored(), "updated_at": now_ts()}
        if meta_extra is not None:
            meta_extra(meta)
        self._put(row, rec.text, meta)
        pairs = {k: [_value(getattr(old, k)), _value(getattr(new, k))] for k in ("category", "importance", "state")
                 if getattr(old, k) != getattr(new, k)}
        self._log(event, rec.id, A.UPDATED, old_text=rec.text, new_text=rec.text, details={"lifecycle": pairs})
        return UndoResult(event_id=_eid(event), action=event.action, memory_ids=[rec.id], message=message)

    # ------------------------------------------------------------------ per action
    def _undo_created(self, event: HistoryEvent) -> UndoResult:
        if FROM in event.details:  # deleting the fact alone would leave its sources archived
            raise InvalidInput(f"memory {event.memory_id} was made by a compression; undo the \"compressed\" events of its "
                               f"sources {event.details[FROM]} instead (or delete it)")
        rec = MemoryRecord.from_row(self._alive(event))
        if event.new_text is not None and rec.text != event.new_text:
            raise self._changed(event)
        self._remove(event, rec)
        return UndoResult(event_id=_eid(event), action=event.action, removed_ids=[rec.id],
                          message=f"memory {rec.id} deleted: its creation was undone")

    def _undo_text(self, event: HistoryEvent, later: Later | None = None) -> UndoResult:
        row = self._alive(event)
        rec = MemoryRecord.from_row(row)
        if event.new_text is None or rec.text != event.new_text:
            raise self._changed(event) if event.new_text is not None else InvalidInput(
                f"event {event.event_id} kept no text to go back to")
        text = event.old_text if event.old_text is not None else rec.text
        meta = {**rec.metadata, "updated_at": now_ts()}
        meta = _metadata_back(meta, event.details.get("metadata"))
        if later is not None and later.distilled and text != rec.text:
            meta = unmarked(meta)  # distilled from the text undone: distil again from the text put back
        if text != rec.text and meta.get("thing") == rec.text:
            meta["thing"] = text
        if event.action is A.SEPARATED and "old_context" in event.details:
            if meta.get("context", "") != event.details.get("new_context", ""):
                raise self._changed(event)
            meta["context"] = event.details["old_context"]
        recorded = event.details.get("lifecycle") if isinstance(event.details.get("lifecycle"), dict) else {}
        pairs = {k: p for k, p in recorded.items() if k in ("category", "importance", "state") and isinstance(p, list) and len(p) == 2}
        back: dict[str, list[Any]] = {}
        if pairs or "last_activated" in event.details:
            life = rec.life.stored()
            update = {k: pair[0] for k, pair in pairs.items()}
            if isinstance(event.details.get("last_activated"), list) and len(event.details["last_activated"]) == 2:
                pairs = {**pairs, "last_activated": event.details["last_activated"]}
                update["last_activated"] = event.details["last_activated"][0]
            if any(life.get(k) != pair[1] for k, pair in pairs.items() if k in ("category", "state")):
                raise self._changed(event)  # the score may have moved since (a use): it goes back all the same
            try:
                meta[LIFE_KEY] = Lifecycle.model_validate({**life, **update}).stored()
            except ValueError:
                raise InvalidInput(f"event {event.event_id} holds lifecycle values that cannot be put back") from None
            back = {k: [pair[1], pair[0]] for k, pair in pairs.items() if k != "last_activated"}
        self._put(row, text, meta)
        self._log(event, rec.id, A.UPDATED, old_text=rec.text, new_text=text, details={"lifecycle": back} if back else {})
        return UndoResult(event_id=_eid(event), action=event.action, memory_ids=[rec.id],
                          message=f"memory {rec.id} is back as it was before event {event.event_id}")

    def _undo_removal(self, event: HistoryEvent) -> UndoResult:
        saved = _saved(event)
        if saved is None:
            raise InvalidInput(f"event {event.event_id} kept no copy of memory {event.memory_id} (written before undo existed); "
                               "nothing to bring back")
        for e in self.ctx.store.history(F.and_(F.eq("memory_id", event.memory_id), F.eq("user_id", event.user_id))):
            if e["action"] == A.RESTORED.value and "restored_as" in e.get("details", {}):
                raise InvalidInput(f"memory {event.memory_id} was restored already as {e['details']['restored_as']}")
        meta = revived(saved) if event.action is A.FORGOTTEN else dict(saved.get("metadata") or {})
        new_id = bring_back(self.ctx.store, self.ctx.embedder, saved, event.memory_id, event.user_id, meta, ACTOR, {"undo_of": event.event_id})
        return UndoResult(event_id=_eid(event), action=event.action, memory_ids=[new_id],
                          message=f"memory {event.memory_id} is back as memory {new_id}")

    def _undo_merge(self, event: HistoryEvent) -> UndoResult:
        user = event.user_id
        merged_id = int(event.details.get("merged_into", event.memory_id))
        mine = [e for e in self.ctx.store.history(F.and_(F.eq("memory_id", merged_id), F.eq("user_id", user)))
                if e["action"] == A.MERGED.value and "merged_from_ids" in e.get("details", {})]
        if not mine:
            raise InvalidInput(f"event {event.event_id} names no merge that can be undone")
        merge = HistoryEvent.model_validate(mine[-1])
        source_ids = [int(i) for i in merge.details["merged_from_ids"]]
        sources = [HistoryEvent.model_validate(e) for e in self.ctx.store.history(F.and_(F.in_("memory_id", source_ids), F.eq("user_id", user)))
                   if e["action"] == A.MERGED.value and e.get("details", {}).get("merged_into") == merged_id]
        related = [_eid(event)] + [_eid(e) for e in [merge, *sources] if e.event_id != event.event_id]
        self._not_undone(related, [merged_id, *source_ids], user)
        row = self._alive(event, merged_id)
        rec = MemoryRecord.from_row(row)
        if rec.metadata.get("merge_pending"):
            raise InvalidInput(f"the merge into memory {merged_id} is still in progress; try again after consolidation")
        if rec.text != merge.new_text:
            raise self._changed(event, merged_id)
        later = check_later(self.ctx.store, event, merged_id, follow=True, after=_eid(merge))
        rows = {e.memory_id: _saved(e) for e in sources}
        if set(rows) != set(source_ids) or any(r is None for r in rows.values()):
            raise InvalidInput(f"the merge into memory {merged_id} kept no copy of its sources (merged before undo existed); "
                               "nothing to bring back")
        saved = [(i, rows[i] or {}) for i in source_ids]
        vectors = self.ctx.embedder.encode([r["text"] for _, r in saved], role="passage")  # before any write
        back = [bring_back(self.ctx.store, self.ctx.embedder, r, i, user, dict(r.get("metadata") or {}), ACTOR, {"undo_of": event.event_id},
                           vector=v.tolist()) for (i, r), v in zip(saved, vectors)]
        self._remove(event, rec)  # the sources are back first: nothing is lost
        return self._follow(event, UndoResult(event_id=_eid(event), action=event.action, memory_ids=back, removed_ids=[merged_id],
                            message=f"merge undone: memory {merged_id} removed, its sources {source_ids} back as {back}"), later)

    def _undo_archived(self, event: HistoryEvent) -> UndoResult:
        row = self._alive(event)
        if MemoryRecord.from_row(row).life.state is not State.ARCHIVED:
            raise self._changed(event)
        return self._with_life(event, row, {"state": State.ACTIVE}, f"memory {event.memory_id} is active again")

    def _undo_promoted(self, event: HistoryEvent) -> UndoResult:
        row = self._alive(event)
        try:
            before = Lifecycle(category=event.details.get("from")).category  # a built-in or a project's own
        except ValueError:
            raise InvalidInput(f"event {event.event_id} kept no category to go back to") from None
        if MemoryRecord.from_row(row).life.category is not Category.CORE:
            raise self._changed(event)
        return self._with_life(event, row, {"category": before}, f"memory {event.memory_id} is {before.value} again")

    def _undo_superseded(self, event: HistoryEvent) -> UndoResult:
        row = self._alive(event)
        life = MemoryRecord.from_row(row).life
        if life.superseded_by is None or life.superseded_by != event.details.get("superseded_by"):
            raise self._changed(event)
        update = {"valid_to": None, "superseded_by": None, "importance": min(1.0, life.importance * 2)}
        return self._with_life(event, row, update, f"memory {event.memory_id} is valid again")

    def _undo_compressed(self, event: HistoryEvent) -> UndoResult:
        row = self._alive(event)
        rec = MemoryRecord.from_row(row)
        if rec.life.state is not State.ARCHIVED or INTO not in rec.metadata:
            raise self._changed(event)
        return self._with_life(event, row, {"state": State.ACTIVE}, f"memory {event.memory_id} is active again (the compressed fact stays)",
                               meta_extra=lambda meta: meta.pop(INTO, None))


def _metadata_back(meta: dict[str, Any], recorded: Any) -> dict[str, Any]:
    """The caller's metadata keys an update set, as they were before it (records.py keeps them)."""
    if not isinstance(recorded, dict):
        return meta
    before = recorded.get("before") if isinstance(recorded.get("before"), dict) else {}
    absent = [k for k in recorded.get("absent") or [] if isinstance(k, str)]
    return {**{k: v for k, v in meta.items() if k not in absent}, **before}


_HANDLERS: dict[HistoryAction, Callable[[UndoService, HistoryEvent], UndoResult]] = {
    A.CREATED: UndoService._undo_created,
    A.UPDATED: UndoService._undo_text,
    A.RECONSOLIDATED: UndoService._undo_text,
    A.SEPARATED: UndoService._undo_text,
    A.DELETED: UndoService._undo_removal,
    A.FORGOTTEN: UndoService._undo_removal,
    A.ARCHIVED: UndoService._undo_archived,
    A.PROMOTED: UndoService._undo_promoted,
    A.SUPERSEDED: UndoService._undo_superseded,
    A.COMPRESSED: UndoService._undo_compressed,
}

_TEXT = (A.UPDATED, A.RECONSOLIDATED, A.SEPARATED)
_SAYS = frozenset({A.CREATED, *_TEXT})  # the undo changes what the memory says: facts distilled since follow it
