"""Expiry on any memory (mem0's `expiration_date`): `expires_at` on add and update.

A caller's expiry reuses the dated to-do's mechanism: it is written as the lifecycle's `expires_at`
(so the prompt block drops the memory the moment it passes and the decay step archives it:
lifecycle/policy.py, prompt_block.py), and also as the library-owned metadata key `expires_at`,
which marks an expiry the caller asked for: such a memory also leaves search and list at once
(`include_expired=True` keeps it; history always does). A to-do's own inferred day only archives it,
as before. No schema change: both live in the memory's JSON metadata.

What `expires_at` takes: epoch seconds, a datetime (naive: the user's zone), an ISO datetime string
("2026-12-01T18:00", naive: the user's zone), an ISO date ("2026-12-01": the end of that day in the
user's zone), or words naming a day ("until Monday", "next Friday", "tomorrow", "到下周一", "明天"),
resolved once from the time the memory was said by lifecycle/when.py's rules: the end of the named
day in the user's zone (MemoryConfig.timezone).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from ..errors import InvalidInput
from ..models import LIFE_KEY
from ..store.expiry import KEY, expired, live
from ..text.dates import day_end, named_day

__all__ = ["KEY", "expired", "live", "resolve", "stamp"]
_MAX = 253402300799  # the end of year 9999


def resolve(value: Any, said_ts: int, tz: tzinfo) -> int | None:
    """The epoch second after which the memory is expired; None when `value` is None.
    Raises InvalidInput (one line) for a value that names no time."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _bounded(int((value if value.tzinfo else value.replace(tzinfo=tz)).timestamp()))
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidInput(f"expires_at takes epoch seconds, a datetime or a date in words, got {type(value).__name__}")
    if not isinstance(value, str):
        return _bounded(int(value))
    text = value.strip()
    if not text or len(text) > 200:
        raise InvalidInput("expires_at must be a non-empty date or time of at most 200 characters")
    if text.isascii() and text.isdigit():
        return _bounded(int(text))  # epoch seconds sent as text (a CLI option, a query string)
    if "T" in text or ":" in text:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            when = None
        if when is not None:
            return _bounded(int((when if when.tzinfo else when.replace(tzinfo=tz)).timestamp()))
    day = named_day(text, said_ts, tz)
    if day is None:
        raise InvalidInput(f"expires_at names no date or time: {text[:60]!r} (use an ISO datetime, epoch seconds, "
                           "or a day such as 'until Monday' / '到下周一')")
    return _bounded(day_end(day, tz))


def _bounded(at: int) -> int:
    if not 0 <= at <= _MAX:
        raise InvalidInput(f"expires_at out of range: {at} (epoch seconds up to the end of year 9999)")
    return at


def stamp(metadata: dict[str, Any], at: int) -> dict[str, Any]:
    """The metadata with the caller's expiry written in both places (returns a new dict)."""
    life = dict(metadata.get(LIFE_KEY) or {})
    if life:
        life["expires_at"] = at
    return {**metadata, KEY: at, **({LIFE_KEY: life} if life else {})}
