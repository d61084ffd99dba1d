"""What happened to a memory after one of its history events (issue 31, item 5), for the undo service.

An event can be undone only when nothing later touched the memory, or what was made from it:

- a later event on the memory (an update, a curate, an archive, a promotion, a supersession, a merge,
  a compression, a delete...) refuses the undo, naming that event (id, action, time): undo it first;
  a later event that cannot be undone itself (a reactivation) says so;
- uses are no change: hits and reviews move the score only, and an undo puts the score back all the same;
- an event and its own undo, both later, cancel out (undo the later one, then the earlier one);
- a later distillation made facts from what the memory said then: when the undo changes what the
  memory says (an update, a created memory or a merge undone), those facts follow their source (they
  are deleted, their rows kept in history, and the memory is distilled again from what it says once
  more); a fact that itself changed since, or that other memories support as well, refuses the undo
  with the reason. An undo that changes the lifecycle only leaves the facts as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidInput
from ..models import HistoryAction, HistoryEvent, MemoryRecord
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F

A = HistoryAction
USES = frozenset({A.HIT, A.REVIEWED, A.DECAY_RUN})  # they move the score, not what the memory is
NOT_UNDOABLE = frozenset({A.REACTIVATED, A.RESTORED, A.DISTILLED, A.GRAPH_PRUNED, A.HIT, A.REVIEWED, A.DECAY_RUN})
GONE = frozenset({A.DELETED, A.FORGOTTEN})  # a fact removed since: nothing left to follow


@dataclass
class Later:
    """What came after an event that does not refuse its undo: whether the memory was distilled since
    (its mark goes when its text goes back) and the facts that follow it."""

    distilled: bool = False
    facts: list[MemoryRecord] = field(default_factory=list)


def when(at: int) -> str:
    return datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _undone(events: list[HistoryEvent]) -> set[int]:
    """Event ids that were undone, among `events`."""
    return {int(e.details["undo_of"]) for e in events if isinstance(e.details.get("undo_of"), int)}


def changes_after(events: list[HistoryEvent], after: int) -> list[HistoryEvent]:
    """The events after event id `after` (ids grow in the order events are written) that changed the memory,
    oldest first: no uses, no pair of an event and its undo (both after `after`)."""
    later = sorted((e for e in events if int(e.event_id or 0) > after and e.action not in USES), key=lambda e: int(e.event_id or 0))
    undone = _undone(later)
    ids = {int(e.event_id or 0) for e in later}
    return [e for e in later if int(e.event_id or 0) not in undone
            and not (isinstance(e.details.get("undo_of"), int) and e.details["undo_of"] in ids)]


def refusal(event_id: int, memory_id: int, later: HistoryEvent, what: str = "memory") -> InvalidInput:
    """The one-line refusal naming the later event and what to do."""
    named = f"event {later.event_id} ({later.action.value}, {when(later.at)})"
    if later.action in NOT_UNDOABLE or later.actor == "undo" or "undo_of" in later.details:
        return InvalidInput(f"{what} {memory_id} changed after event {event_id}: {named} came later and cannot be undone "
                            f"itself, so event {event_id} cannot be undone any more")
    return InvalidInput(f"{what} {memory_id} changed after this event; undo the later event first: {named}, "
                        f"then event {event_id}")


def check_later(store: MilvusStore, event: HistoryEvent, memory_id: int, follow: bool, after: int | None = None) -> Later:
    """Refuse (InvalidInput naming the later event) when something later touched memory `memory_id` or a
    fact distilled from it; else what follows the undo. `follow`: the undo changes what the memory says,
    so facts distilled since must go with it. `after`: the event id to look after (default `event`'s)."""
    eid = int(event.event_id or 0)
    start = eid if after is None else after
    user = event.user_id
    events = [HistoryEvent.model_validate(e) for e in store.history(F.and_(F.eq("memory_id", memory_id), F.eq("user_id", user)))]
    out = Later()
    fact_ids: list[int] = []
    blocking: list[HistoryEvent] = []
    for later in changes_after(events, start):
        if later.action is A.DISTILLED:
            out.distilled = True
            fact_ids += [int(i) for i in later.details.get("semantic_ids") or [] if isinstance(i, int)]
        else:
            blocking.append(later)
    if blocking:  # the newest: the one that can be undone now
        raise refusal(eid, memory_id, blocking[-1])
    if not follow or not fact_ids:
        return out
    rows = {int(r["id"]): r for r in store.by_ids(fact_ids, [*MEMORY_FIELDS], where=F.eq("user_id", user))}
    fact_events: dict[int, list[HistoryEvent]] = {}
    for raw in store.history(F.and_(F.in_("memory_id", fact_ids), F.eq("user_id", user))):
        ev = HistoryEvent.model_validate(raw)
        fact_events.setdefault(ev.memory_id, []).append(ev)
    for fid in dict.fromkeys(fact_ids):
        mine = fact_events.get(fid, [])
        created = next((e for e in mine if e.action is A.CREATED), None)
        changes = changes_after(mine, int(created.event_id or 0)) if created is not None else []
        if fid not in rows and all(e.action in GONE | {A.GRAPH_PRUNED} for e in changes):
            continue  # deleted or forgotten since (or never stored): nothing to follow
        if changes:  # changed since, merged into another, ...: the newest change is the one to undo first
            raise _fact_refusal(eid, memory_id, fid, changes[-1])
        fact = MemoryRecord.from_row(rows[fid])
        sources = [s for s in fact.metadata.get("source_memory_ids") or [] if s != memory_id]
        if sources:
            raise InvalidInput(f"event {eid} cannot be undone: fact {fid} was distilled from memory {memory_id} and also from "
                               f"memories {sources}, so it cannot simply follow; edit or delete fact {fid} first")
        out.facts.append(fact)
    _no_supersession(store, eid, memory_id, user, [f.id for f in out.facts])
    return out


def _no_supersession(store: MilvusStore, event_id: int, memory_id: int, user: str, fact_ids: list[int]) -> None:
    """Refuse when a fact that would follow has superseded an older memory that is still superseded by it:
    deleting the fact would leave that one replaced by nothing (undo the supersession first)."""
    if not fact_ids:
        return
    hits = [HistoryEvent.model_validate(e) for e in store.history(F.and_(F.eq("user_id", user), F.eq("action", A.SUPERSEDED.value)))]
    hits = [e for e in hits if e.details.get("superseded_by") in fact_ids]
    if not hits:
        return
    rows = store.by_ids([e.memory_id for e in hits], [*MEMORY_FIELDS], where=F.eq("user_id", user))
    still = {int(r["id"]): MemoryRecord.from_row(r).life.superseded_by for r in rows}
    for e in hits:
        if still.get(e.memory_id) == e.details["superseded_by"]:
            raise InvalidInput(f"event {event_id} cannot be undone: fact {e.details['superseded_by']} distilled from memory {memory_id} "
                               f"would have to follow, but it superseded memory {e.memory_id} by event {e.event_id} ({e.action.value}, "
                               f"{when(e.at)}); undo event {e.event_id} first")


def _fact_refusal(event_id: int, memory_id: int, fact_id: int, later: HistoryEvent) -> InvalidInput:
    base = refusal(event_id, fact_id, later, what="fact")
    return InvalidInput(f"event {event_id} cannot be undone: fact {fact_id} distilled from memory {memory_id} would have "
                        f"to follow, but {str(base)[0].lower()}{str(base)[1:]}")


def unmarked(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata without the distillation marks, so the next consolidation distils the memory again."""
    return {k: v for k, v in metadata.items() if k not in ("distilled", "semantic_ids")}
