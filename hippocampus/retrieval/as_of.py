"""Time in a search: what was current at a moment (`as_of`), and questions about the past.

A superseded memory (lifecycle/supersede.py, memory/forget.supersede_corrected) keeps `valid_to` (when
the turn that corrected it was said) and `superseded_by`. Two readings use them:

- `search(..., as_of=T)` answers as the memory stood at T: a memory said at or before T (its `ts`, the
  event time the supersede's `valid_to` is also measured on) and not superseded at or before T, and not yet
  expired at T. "Where did I live in March?" is `as_of="2026-03-31"`.
- a question about the past ("where did I live before?", "what was my old job", "我以前住在哪") is
  answered with the superseded memories too, each placed just before the memory that replaced it: the old
  value is what is asked for, and the new one stays next to it. A present question never gets a superseded
  memory ahead of the memory that replaced it (when the caller asked for superseded memories at all; by
  default it gets none).

Pure: the cue table and the three functions below read only their arguments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any

from ..errors import InvalidInput
from ..models import SearchHit
from ..store import expiry
from ..text.assistant import has_item

_MAX = 253402300799  # the end of year 9999

# The words that ask about the past of a slot. English needs care: "how old am I" and "before the trip"
# are present questions, so "old" counts only as an owned adjective and "before" only at a clause's end
# or before "that", "then", "now" or a past verb.
PAST_CUES: dict[str, re.Pattern[str]] = {
    "en": re.compile(
        r"\b(?:used to|did (?:i|we) use to|previous(?:ly)?|former(?:ly)?|earlier|back then|in the past|originally|at first|prior|"
        r"(?:my|our|the|his|her|their|your) old|old (?:job|address|home|house|place|name|number|phone|email|rent|school|"
        r"company|employer|apartment|flat|city|salary|car)|"
        r"before(?=\s*(?:$|[?.!,;]|that\b|then\b|now\b|(?:i|we)\s+\w+ed\b)))",
        re.IGNORECASE),
    "zh": re.compile(r"以前|之前|原来|原先|过去|曾经|从前|以往|当初|早先|上一[份个家套]|前一[份个家套]|旧的?(?:工作|地址|名字|房子|电话|公司)"),
}


def asks_past(query: str) -> bool:
    """Whether `query` asks what was true before (a superseded value), in English or Chinese."""
    return any(p.search(query) for p in PAST_CUES.values())


def moment(value: Any, tz: tzinfo = timezone.utc) -> int | None:
    """`as_of` as epoch seconds: a datetime (naive: in `tz`), epoch seconds, or ISO 8601 text (a date alone
    means the end of that day). None stays None. Raises InvalidInput for anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (datetime, int, float, str)):
        raise InvalidInput(f"as_of takes a datetime, epoch seconds or ISO 8601 text, got {type(value).__name__}")
    if isinstance(value, datetime):
        at = (value if value.tzinfo else value.replace(tzinfo=tz)).timestamp()
    elif isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            at = int(text)
        else:
            try:
                when = datetime.fromisoformat(text)
            except ValueError:
                raise InvalidInput(f"as_of is not an ISO 8601 date or time, nor epoch seconds: {text[:60]!r}") from None
            if len(text) <= 10:  # a date alone: as the day ended
                when = when.replace(hour=23, minute=59, second=59)
            at = (when if when.tzinfo else when.replace(tzinfo=tz)).timestamp()
    else:
        at = value
    if not 0 <= at <= _MAX:
        raise InvalidInput(f"as_of out of range: {at} (epoch seconds up to the end of year 9999)")
    return int(at)


def current_at(hit: SearchHit, at: int, include_expired: bool = False) -> bool:
    """Whether the hit's memory was current at `at`: said by then, not superseded by then, not expired then."""
    record = hit.memory
    valid_to = record.life.valid_to
    if record.ts > at or (record.life.superseded_by is not None and (valid_to is None or valid_to <= at)):
        return False
    return include_expired or not expiry.expired(record.metadata, at)


def ordered(hits: Sequence[SearchHit], past: bool) -> list[SearchHit]:
    """The hits with each superseded one moved next to the memory that replaced it, when both are there:
    just before it for a question about the past, just after it otherwise. Nothing is dropped; a superseded
    hit whose successor is not among the hits keeps its place."""
    out = list(hits)
    for _ in range(len(out)):  # a chain (A -> B -> C) settles in at most len(hits) passes
        moved = False
        for hit in list(out):
            by = hit.memory.life.superseded_by
            if by is None:
                continue
            ids = [h.memory.id for h in out]
            if by not in ids:
                continue
            mine, theirs = ids.index(hit.memory.id), ids.index(by)
            if (past and mine > theirs) or (not past and mine < theirs):
                out.pop(mine)
                theirs = [h.memory.id for h in out].index(by)
                out.insert(theirs if past else theirs + 1, hit)
                moved = True
        if not moved:
            break
    return out


def items_first(hits: Sequence[SearchHit], n: int | None) -> list[SearchHit]:
    """For a question naming a list item by its number ("the 7th job idea"), the hits holding a list with
    that item first (text/assistant.py `ordinal`, `has_item`), else the hits as they are."""
    if n is None:
        return list(hits)
    return sorted(hits, key=lambda h: not has_item(h.memory.text, n))  # stable: otherwise in their order
