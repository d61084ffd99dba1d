"""Imported entries keep the one rule for time (lifecycle/when.py): a relative date in an entry's text
("tomorrow", "明天", "next Friday") is resolved from when the entry was said, never from when it is
imported. A JSONL line says when through its `said_at`, else `created_at`, else `ts`; a MEMORY.md
`[new]` entry through its heading's date (noon of that day in the user's zone; today or later: now).
A reminder said months ago for "tomorrow" is therefore past on import (it expired then), as it would
be in the store it came from."""

from __future__ import annotations

from datetime import date, datetime, time, tzinfo
from typing import Any

from ..lifecycle import when
from ..lifecycle.categories import new_life
from ..models import LIFE_KEY, Category, Lifecycle, MemoryType, ts_to_iso
from ..text.dates import day_end, named_day, said_day


def dated(row: dict[str, Any], now: int, tz: tzinfo) -> dict[str, Any]:
    """A row about to be imported with its named day resolved from when it was said: `said_at` and
    `named_date` in its metadata when missing, and a to-do's expiry at the end of that day in `tz`;
    a row without a lifecycle gets one (its category guessed from the text, as add does). Pure."""
    meta = dict(row.get("metadata") or {})
    said = when.said_ts_of(meta, int(row["ts"]))
    day = named_day(row["text"], said, tz)
    meta.setdefault("said_at", ts_to_iso(said))
    if day is not None:
        meta.setdefault("named_date", day.isoformat())
    life = Lifecycle.stored_in(meta)
    if life is None and LIFE_KEY not in meta:
        life = new_life(row["text"], MemoryType(row["memory_type"]), now, said, tz=tz)
        meta[LIFE_KEY] = life.stored()
    elif life is not None and life.category is Category.TODO and life.expires_at is None and day is not None:
        meta[LIFE_KEY] = life.model_copy(update={"expires_at": day_end(day, tz)}).stored()
    return {**row, "metadata": meta}


def said_on(day: date, now: int, tz: tzinfo) -> int:
    """When a MEMORY.md `[new]` entry dated `day` was said: noon of that day in the user's zone, or now when
    that is today or later (a date to come says nothing of when it was said)."""
    if day >= said_day(now, tz):
        return now
    return int(datetime.combine(day, time(12, 0), tzinfo=tz).timestamp())
