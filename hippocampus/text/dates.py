"""Dates named in text: a relative day ("tomorrow", "next Friday", "明天", "下周二", "in 3 days") resolved once
from when the turn was said, in a given zone; the end of that day; a memory's event time. Text heuristics that
the write path (lifecycle/when.py, store/writes.py), the offline rules provider (llm/rules) and imports share."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo

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
