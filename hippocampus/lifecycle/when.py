"""One rule for time and one for importance, the same on every write path (issue 31 items 2 and 3).

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
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import Any

from ..config import zone
from ..text import clauses, key_terms
from .policy import LEVELS

_EN_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_DAYS = "一二三四五六日天"
_ZH_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

_OFFSETS: tuple[tuple[re.Pattern[str], int], ...] = (  # read top to bottom: "day after tomorrow" before "tomorrow"
    (re.compile(r"大后天|\bin three days\b", re.I), 3),
    (re.compile(r"后天|\bday after tomorrow\b", re.I), 2),
    (re.compile(r"前天|\bday before yesterday\b", re.I), -2),
    (re.compile(r"明天|明晚|明早|明日|\btomorrow\b", re.I), 1),
    (re.compile(r"昨天|昨晚|昨日|\byesterday\b|\blast night\b", re.I), -1),
    (re.compile(r"今天|今晚|今早|今日|\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b", re.I), 0),
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_EN_WEEKDAY = re.compile(r"\b(next|this|on|coming|last)?\s*(" + "|".join(_EN_DAYS) + r")\b", re.I)
_ZH_WEEKDAY = re.compile(r"(下下|下个?|这个?|本|上个?)?(?:周|星期|礼拜)([" + _ZH_DAYS + "])")
_IN_DAYS = re.compile(r"\bin (\d{1,3}|one|two|three|four|five|six|seven) days?\b|(\d{1,3}|[一两二三四五六七八九十])天(?:后|之后|以后)", re.I)
_EN_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_REMEMBER = re.compile(
    r"(?:^|\bplease\s+|[.!?,;:]\s*)remember\b(?!\s+(?:when|how|if|what|where|who|why)\b)|\bremember (?:that|this)\b"
    r"|\bdon'?t forget\b|\bdo not forget\b|\bnote that\b|\bkeep in mind\b|\bmake a note\b"
    r"|记住|记一下|记下来|记着|别忘|不要忘",
    re.IGNORECASE,
)
_NOT_A_REQUEST = re.compile(r"你还?记得|还记得|记不记得|记得吗|\b(?:do|did|can|could|would|will) you (?:still )?remember\b", re.I)


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


def said_day(said_ts: int, tz: tzinfo) -> date:
    """The calendar day, in the user's zone, on which the turn was said."""
    return datetime.fromtimestamp(int(said_ts), tz).date()


def _weekday(text: str, today: date) -> date | None:
    """"next Friday" / "下周五": that day of next week (weeks start on Monday); "this Friday" / "这周五": of
    this week; "on Friday" / "Friday" / "周五": the coming one (a week on when said that day); "last Friday" /
    "上周五": of last week."""
    m = _EN_WEEKDAY.search(text)
    if m:
        which, target = (m.group(1) or "").lower(), _EN_DAYS.index(m.group(2).lower())
        weeks = {"next": 1, "this": 0, "last": -1}.get(which)
    else:
        m = _ZH_WEEKDAY.search(text)
        if not m:
            return None
        which, target = m.group(1) or "", min(_ZH_DAYS.index(m.group(2)), 6)  # 日 / 天: Sunday
        weeks = 2 if which == "下下" else 1 if which.startswith("下") else -1 if which.startswith("上") else 0 if which else None
    if weeks is None:  # the coming one
        return today + timedelta(days=(target - today.weekday()) % 7 or 7)
    return today - timedelta(days=today.weekday()) + timedelta(weeks=weeks, days=target)


def named_day(text: str, said_ts: int, tz: tzinfo) -> date | None:
    """The calendar day the text names, resolved from the day it was said in the user's zone; None when it
    names none. An ISO date wins, then day words (前天 … 大后天, yesterday … day after tomorrow), then
    "in N days" / "N天后", then weekdays ("next Friday", "下周二", "周五")."""
    m = _ISO.search(text or "")
    if m:
        try:
            return date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            pass
    today = said_day(said_ts, tz)
    for pattern, days in _OFFSETS:
        if pattern.search(text or ""):
            return today + timedelta(days=days)
    m = _IN_DAYS.search(text or "")
    if m:
        raw = (m.group(1) or m.group(2)).lower()
        n = int(raw) if raw.isdigit() else _EN_NUM.get(raw) or _ZH_NUM.get(raw, 0)
        if n:
            return today + timedelta(days=n)
    return _weekday(text or "", today)


def day_end(day: date, tz: tzinfo) -> int:
    """The last second (epoch) of `day` in the user's zone."""
    return int(datetime.combine(day + timedelta(days=1), time(0, 0), tzinfo=tz).timestamp()) - 1


def expiry(text: str, said_ts: int, tz: tzinfo) -> int | None:
    """When a todo that names a day expires: the end of that day in the user's zone; None when it names none."""
    day = named_day(text, said_ts, tz)
    return day_end(day, tz) if day is not None else None


def event_time_iso(text: str, said_ts: int, tz: tzinfo) -> str:
    """The event time of a turn for the write decider: the named day at the hour it was said, else when it was
    said (ISO, in the user's zone)."""
    said = datetime.fromtimestamp(int(said_ts), tz)
    day = named_day(text, said_ts, tz)
    if day is None or day == said.date():
        return said.isoformat()
    return datetime.combine(day, said.timetz().replace(tzinfo=None), tzinfo=tz).isoformat()


def asked_to_remember(said: str) -> bool:
    """The user explicitly asked to remember ("remember that", "don't forget", "请记住", "别忘了")."""
    return bool(_REMEMBER.search(said or "")) and not _NOT_A_REQUEST.search(said or "")


def remembered_part(said: str) -> str:
    """The clauses a remember request covers: the one with the phrase, and the next when that one holds
    nothing else ("请记住，我对青霉素过敏")."""
    parts = clauses(said or "")
    picked: list[str] = []
    for i, clause in enumerate(parts):
        if _REMEMBER.search(clause):
            picked.append(clause)
            if not key_terms(_REMEMBER.sub(" ", clause)) and i + 1 < len(parts):
                picked.append(parts[i + 1])
    return " ".join(picked)


def importance(said: str, given: float | None = None, memory: str | None = None) -> float:
    """The one importance rule: 0.8 when the user asked to remember (this memory: when `memory` is given, it
    must share a word with what the request covers, so "pottery on Thursdays, and remember I'm vegetarian"
    raises only the vegetarian memory), else 0.6; a model's (or an import's) level is kept, raised to 0.8
    when the user asked to remember it."""
    covered = asked_to_remember(said) and (memory is None or _shares(memory, remembered_part(said)))
    floor = LEVELS["high"] if covered else None
    if given is None:
        return floor if floor is not None else LEVELS["medium"]
    return max(float(given), floor) if floor is not None else float(given)


def _shares(memory: str, part: str) -> bool:
    """The memory holds a content word, Chinese pair or number of the remembered clauses (or they hold none)."""
    wanted = key_terms(_REMEMBER.sub(" ", part)) | set(re.findall(r"\d{3,}", part))
    return not wanted or bool(wanted & (key_terms(memory) | set(re.findall(r"\d{3,}", memory))))
