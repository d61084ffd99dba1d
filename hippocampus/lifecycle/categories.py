"""The honest degraded guess of a new memory's category, importance and todo date, for memories
that no model labelled (infer=False, the offline rules provider, consolidation's facts). Patterns
only where they are near certain; everything else is an experience (episodes) or a fact.
"""

from __future__ import annotations

import re
from datetime import tzinfo

from ..models import Category, Lifecycle, MemoryType
from . import when

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
    """An explicit "remember" is high (0.8), anything else medium (0.6): the importance levels (when.importance)."""
    return when.importance(text)


def todo_expiry(text: str, said_ts: int, tz: tzinfo | None = None) -> int | None:
    """The end of the day a todo names (an ISO date, today / tomorrow / next Friday / 明天 / 下周二 ...), resolved
    from when it was said, in the user's zone (the machine's when None); None when it names none (when.py)."""
    return when.expiry(text, said_ts, tz or when.zone())


def new_life(text: str, memory_type: MemoryType, now: int, event_ts: int, category: Category | None = None,
             importance: float | None = None, *, said: str | None = None, tz: tzinfo | None = None) -> Lifecycle:
    """The lifecycle fields of a memory written now; a given category wins over the guess. `event_ts` is when
    the turn was said; `said`, the turn as the user said it (a fresh write): the one importance rule reads it
    (an explicit "remember" is at least 0.8, whatever the memory's text kept), and a todo's day is looked for
    in the memory's text, then in it. Without `said` (an import, a restore) a given importance is kept as is."""
    category = category or guess_category(text, memory_type)
    expires = None
    if category is Category.TODO:
        expires = todo_expiry(text, event_ts, tz)
        if expires is None and said:
            expires = todo_expiry(said, event_ts, tz)
    if said is not None:
        score = when.importance(said or text, importance, memory=text)
    else:
        score = guess_importance(text) if importance is None else importance
    return Lifecycle(importance=score, category=category, last_activated=now, expires_at=expires)
