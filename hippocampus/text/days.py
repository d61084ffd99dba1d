"""The day an event was told and whether two tellings can be one event by their times: text heuristics that
consolidation's rules (consolidation/rules.py) and the offline rules provider (llm/rules) share."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

# Words that tie an event to the day it was told: two tellings on different days name two
# days, so two events ("I went running this morning" on Monday and on Wednesday).
DAY_TIED = re.compile(
    r"\b(today|tonight|yesterday|tomorrow|this (?:morning|afternoon|evening|week)|last night|just now)\b"
    r"|今天|今晚|今早|今晨|昨天|昨晚|前天|明天|明晚|后天|刚才|刚刚",
    re.IGNORECASE,
)


_DAY_TAG = re.compile(r"\s*\[\d{4}-\d{2}-\d{2}\]")


def strip_day_tags(text: str) -> str:
    """A text without the "[2027-01-25]" tags an older Separator appended: a memory's day is its `time`."""
    return _DAY_TAG.sub("", str(text or "")).strip()


def event_day(value: Any) -> str:
    """The calendar day of an ISO time (as written, in its own offset); "" when there is none."""
    if isinstance(value, str) and len(value) >= 10:
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            return value.strip()[:10]
    return ""


def times_allow_one_event(text_a: str, time_a: Any, text_b: str, time_b: Any) -> tuple[bool, str]:
    """Can two tellings be one event by their times? Not when either text ties its event to the
    day it was told (DAY_TIED) and the days differ; identical words change nothing."""
    day_a, day_b = event_day(time_a), event_day(time_b)
    if day_a and day_b and day_a != day_b and (DAY_TIED.search(text_a or "") or DAY_TIED.search(text_b or "")):
        return False, f"relative time words on different days ({day_a} vs {day_b}): two events"
    return True, ""
