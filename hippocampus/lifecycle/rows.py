"""A new memory's row, finished here before the store sees it: its lifecycle fields (category and
importance guessed where no model gave them, a project category whose keywords the text holds, the todo
expiry), when it was said and the day it names. The store (store/writes.Writer) embeds and writes what
it is handed and decides none of this."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from ..config import zone as local_zone
from ..models import LIFE_KEY, CategorySpec, Lifecycle, MemoryRecord, MemoryType, now_ts, ts_to_iso
from ..text import slots
from ..text.dates import named_day
from ..text.slots import read as read_slots
from .categories import new_life, with_declared


def new_row(user_id: str, mtype: MemoryType, ts: int, chat_id: str, who: str, text: str, meta: dict[str, Any],
            *, said_ts: int | None = None, tz: tzinfo | None = None, hit_count: int = 0,
            declared: Sequence[CategorySpec] = ()) -> dict[str, Any]:
    """A memory row before embedding; `created_at` / `updated_at` and the lifecycle fields
    (category and importance guessed where no model gave them: lifecycle/categories.py) are the library's.

    `said_ts` marks a turn written now (every write path passes it; a restore or compression does not):
    the row then keeps when it was said (`said_at`) and the day it names (`named_date`, in the user's
    zone `tz`), and its importance and todo expiry follow the one rule of lifecycle/when.py, read from
    the turn as said (`source_text`) whatever text the memory keeps. `declared`: the project's own
    categories (MemoryConfig.categories), whose keywords replace the built-in category guessed for the
    text (categories.with_declared: never one a model or a person gave)."""
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
    statements = read_slots(text) if slots.KEY not in meta else []  # who and which slot it states (text/slots.py)
    if statements:
        extra[slots.KEY] = slots.stored(statements)
    metadata = {**meta, **extra, "created_at": meta.get("created_at", now), "updated_at": now, LIFE_KEY: life}
    stored = Lifecycle.stored_in(metadata) if declared else None
    if stored is not None:
        category = with_declared(text, mtype, stored.category, declared)
        if category is not stored.category:
            metadata[LIFE_KEY] = stored.model_copy(update={"category": category}).stored()
    return MemoryRecord(id=0, user_id=user_id, memory_type=mtype, ts=int(ts), chat_id=chat_id, who=who, text=text,
                        hit_count=hit_count, metadata=metadata).to_row(with_id=False)


def plain_row(user_id: str, mtype: MemoryType, ts: int, chat_id: str, who: str, text: str, extra: dict[str, Any],
              tz: tzinfo | None = None, declared: Sequence[CategorySpec] = ()) -> dict[str, Any]:
    """A turn stored as it is (infer=False): an episode's context/thing/time/chatid/who, a fact's
    fact/source_chatid/first_seen, or a procedure's procedure/source_chatid/first_seen, with the
    caller's metadata on top; said at `ts`, its named day resolved in `tz`, categorised with `declared` (new_row)."""
    if mtype is MemoryType.EPISODIC:
        meta = {"context": "", "thing": text, "time": ts_to_iso(ts), "chatid": chat_id, "who": who, **extra}
    elif mtype is MemoryType.PROCEDURAL:
        meta = {"procedure": text, "source_chatid": chat_id, "first_seen": ts_to_iso(ts), **extra}
    else:
        meta = {"fact": text, "source_chatid": chat_id, "first_seen": ts_to_iso(ts), **extra}
    return new_row(user_id, mtype, ts, chat_id, who, text, meta, said_ts=ts, tz=tz, declared=declared)
