"""One rule for time and one for importance, the same on every write path (issue 31 items 2 and 3). The
date heuristics themselves live in text/dates.py (the offline rules provider reads them too); this module
picks the user's zone for them and decides importance.

A relative date ("tomorrow", "next Friday", "明天", "下周二") is resolved once, from the time the turn was
said, in the user's time zone (MemoryConfig.user_timezones[user], else MemoryConfig.timezone, else the
machine's zone: `user_zone`): a memory keeps
when it was said (`said_at`) and, separately, the day it names (`named_date`); a todo expires at the
end of that day in that zone. The write decider's event time uses the same function, so a turn that
went through the model path is never resolved a second time from its already shifted event time.

Importance: an explicit "remember" in what the user said is high (0.8), anything else medium (0.6); a
model's level is kept when it is higher. The rule reads the turn as said, not the memory's distilled
text, so "Remember that my passport number ends in 4471" is 0.8 whether the words "remember that" were
stripped by the write decider or not.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone, tzinfo
from typing import Any

from ..config import zone
from ..text import clauses, key_terms
from ..text.turns import REMEMBER, asks_to_remember
from .policy import LEVELS


def user_zone(config: Any, user_id: str | None = None) -> tzinfo:
    """The zone `user_id`'s dates are read in: config.user_timezones[user_id], else config.timezone, else
    the machine's. Every write path (add, infer, observe, deferred, session, import) asks this once."""
    names = getattr(config, "user_timezones", None) or {}
    return zone(names[user_id] if user_id in names else getattr(config, "timezone", None))


def said_ts_of(metadata: dict[str, Any], ts: int) -> int:
    """When a stored or imported entry was said: its `said_at`, else `created_at`, else its `ts` (epoch s)."""
    said = metadata.get("said_at")
    if isinstance(said, str):
        try:
            moment = datetime.fromisoformat(said.replace("Z", "+00:00"))
            return int((moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp())
        except ValueError:
            pass
    created = metadata.get("created_at")
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created > 0:
        return int(created)
    return int(ts)


def remembered_part(said: str) -> str:
    """The clauses a remember request covers: the one with the phrase, and the next when that one holds
    nothing else ("请记住，我对青霉素过敏")."""
    parts = clauses(said or "")
    picked: list[str] = []
    for i, clause in enumerate(parts):
        if REMEMBER.search(clause):
            picked.append(clause)
            if not key_terms(REMEMBER.sub(" ", clause)) and i + 1 < len(parts):
                picked.append(parts[i + 1])
    return " ".join(picked)


def importance(said: str, given: float | None = None, memory: str | None = None) -> float:
    """The one importance rule: 0.8 when the user asked to remember (this memory: when `memory` is given, it
    must share a word with what the request covers, so "pottery on Thursdays, and remember I'm vegetarian"
    raises only the vegetarian memory), else 0.6; a model's (or an import's) level is kept, raised to 0.8
    when the user asked to remember it."""
    covered = asks_to_remember(said) and (memory is None or _shares(memory, remembered_part(said)))
    floor = LEVELS["high"] if covered else None
    if given is None:
        return floor if floor is not None else LEVELS["medium"]
    return max(float(given), floor) if floor is not None else float(given)


def _shares(memory: str, part: str) -> bool:
    """The memory holds a content word, Chinese pair or number of the remembered clauses (or they hold none)."""
    wanted = key_terms(REMEMBER.sub(" ", part)) | set(re.findall(r"\d{3,}", part))
    return not wanted or bool(wanted & (key_terms(memory) | set(re.findall(r"\d{3,}", memory))))
