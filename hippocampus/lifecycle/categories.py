"""The honest degraded guess of a new memory's category, importance and todo date, for memories
that no model labelled (infer=False, the offline rules provider, consolidation's facts). Patterns
only where they are near certain; everything else is an experience (episodes) or a fact.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from ..models import Category, Lifecycle, MemoryType
from .policy import DAY, LEVELS

_TODO = re.compile(
    r"\b(remind me|i need to|i have to|i must|i should|todo|to-do|don'?t forget to|i'?ll need to)\b"
    r"|提醒我|我要记得|待办|需要去|得去|记得要|别忘了",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\bi (really )?(like|love|prefer|hate|dislike|enjoy|can'?t stand)\b|\bmy favou?rite\b"
    r"|\b(the )?user (really )?(likes|loves|prefers|hates|dislikes|enjoys)\b|\b(the )?user'?s favou?rite\b"  # a distilled fact
    r"|(我|用户)(很|最|特别|不)?(喜欢|爱|讨厌|偏好|更喜欢)|最喜欢",
    re.IGNORECASE,
)
_DECISION = re.compile(r"\bi (have )?decided\b|\bwe (have )?decided\b|\bi'?m going with\b|决定", re.IGNORECASE)
_WORKFLOW = re.compile(r"\b(always|usually) (run|deploy|use|do)\b|\bmy workflow\b|流程|每次都先", re.IGNORECASE)
_REMEMBER = re.compile(r"\bremember (that|this)\b|\bdon'?t forget\b|记住|别忘", re.IGNORECASE)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_TOMORROW = re.compile(r"\btomorrow\b|明天", re.IGNORECASE)
_TODAY = re.compile(r"\btoday\b|\btonight\b|今天|今晚", re.IGNORECASE)


def guess_category(text: str, memory_type: MemoryType) -> Category:
    """todo, preference, decision or workflow when a pattern says so; else experience / fact."""
    for pattern, category in ((_TODO, Category.TODO), (_PREFERENCE, Category.PREFERENCE),
                              (_DECISION, Category.DECISION), (_WORKFLOW, Category.WORKFLOW)):
        if pattern.search(text):
            return category
    if memory_type is MemoryType.PROCEDURAL:
        return Category.SKILL_USAGE  # a tool-call sequence that worked
    return Category.FACT if memory_type is MemoryType.SEMANTIC else Category.EXPERIENCE


def guess_importance(text: str) -> float:
    """An explicit "remember" is high (0.8), anything else medium (0.6): the importance levels."""
    return LEVELS["high"] if _REMEMBER.search(text) else LEVELS["medium"]


def todo_expiry(text: str, event_ts: int) -> int | None:
    """The end (UTC) of the day a todo names: an ISO date, or tomorrow / today relative to the
    turn's time; None when it names none."""
    m = _ISO_DATE.search(text)
    if m:
        try:
            day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=timezone.utc)
        except ValueError:
            return None
        return int(day.timestamp()) + DAY - 1
    start = (event_ts // DAY) * DAY
    if _TOMORROW.search(text):
        return start + 2 * DAY - 1
    if _TODAY.search(text):
        return start + DAY - 1
    return None


def new_life(text: str, memory_type: MemoryType, now: int, event_ts: int, category: Category | None = None,
             importance: float | None = None) -> Lifecycle:
    """The lifecycle fields of a memory written now; a given category or importance wins over the guess."""
    category = category or guess_category(text, memory_type)
    expires = todo_expiry(text, event_ts) if category is Category.TODO else None
    return Lifecycle(importance=guess_importance(text) if importance is None else importance, category=category,
                     last_activated=now, expires_at=expires)
