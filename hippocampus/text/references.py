"""Forget by reference (issue 55): "昨天说的网贷那件事你忘了吧，别记着", "the thing about my loan I told you
yesterday, forget it", "forget what I said about the loan last week".

Such a request names what to forget in a clause of its own (the reference: "昨天说的网贷那件事", "the thing about
my loan I told you yesterday"), and asks in another ("别记着", "forget it"), or in the same clause with the verb
last ("…你忘了吧"). The reference belongs to the request: it is never stored, and its words ("网贷", "loan") are
what the forget machinery (memory/forget.py) looks for. Its time words ("昨天", "last week") name when it was
said: `said_window` turns them into a window of days before now, one table.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from .lazy import lazy_compile

# A clause that points at something said before: "那件事", "说的", "the thing about", "what I told you".
REFERENCE = lazy_compile(
    r"那件事|那个事|那事|那些事|这件事|的事情?|说的|讲的|提到的|说过的|告诉你的|聊的"
    r"|\b(?:the|that|this|those) (?:thing|stuff|part|bit|story|business)s?\b|\bwhat i (?:said|told you|mentioned|shared)\b"
    r"|\b(?:i|i've) (?:told you|mentioned|said|shared)\b|\beverything i (?:said|told you)\b",
    re.IGNORECASE,
)
# "…你忘了吧", "…就忘掉吧", "…忘了它": the ask at the end of a Chinese clause that names what (never "我忘了…").
ASK_AT_END = lazy_compile(r"(?<![我都别不要能])(?:你|就|都)?(?:给我)?(?:忘了|忘掉|忘记|删了|删掉)(?:它|吧|好吗|哈|啊|了)*$"
                          r"|(?<!\bdon't )(?<!\bnot )\b(?:please\s+)?(?:forget|delete|erase|drop)\s+(?:it|that|about it|all of it)"
                          r"(?:\s+please)?\s*[.!]*$", re.IGNORECASE)
# "just forget it please", "就忘了吧": a bare ask whose thing is named by the clause beside it.
BARE_ASK = lazy_compile(r"^(?:(?:just|so|please|and|ok|okay|then)\s+)*(?:forget|delete|erase|drop)\s+(?:it|that|about it|all of it)"
                        r"(?:\s+please)?\s*[.!]*$|^(?:你|就|都|那就|那你)*(?:忘了|忘掉|忘记|删了|删掉)(?:它|吧|好吗|哈|啊|了)*$", re.IGNORECASE)
# Frame words of a reference, left out of the words it names.
FRAME = lazy_compile(
    r"那件事|那个事|那事|那些事|这件事|的事情?|说的|讲的|提到的|说过的|告诉你的|聊的|跟你|和你|对你|你|我|关于|有关|那个|这个"
    r"|忘了|忘掉|忘记|删了|删掉|别记着?|不要记着?|吧|好吗"
    r"|\b(?:the|that|this|those) (?:thing|stuff|part|bit|story|business)s?\b|\b(?:what|everything|i|i've|you|told|said|mentioned|shared"
    r"|about|regarding|forget|it|please|earlier|ago)\b",
    re.IGNORECASE,
)
# When it was said: (days back at the earliest, days back at the latest), counted in whole days before today.
WINDOWS: tuple[tuple[re.Pattern[str], tuple[int, int]], ...] = (
    (re.compile(r"前天|\bday before yesterday\b", re.I), (2, 2)),
    (re.compile(r"昨天|昨晚|\byesterday\b|\blast night\b", re.I), (1, 1)),
    (re.compile(r"今天|刚才|刚刚|今早|\btoday\b|\bearlier\b|\bjust now\b|\bthis morning\b", re.I), (0, 0)),
    (re.compile(r"上周|上个星期|上礼拜|\blast week\b", re.I), (14, 1)),
    (re.compile(r"这周|本周|\bthis week\b", re.I), (7, 0)),
    (re.compile(r"上个月|\blast month\b", re.I), (62, 1)),
)


def is_reference(clause: str) -> bool:
    """The clause points at something said before, and says nothing new of its own."""
    return bool(REFERENCE.search(clause))


def asks_by_reference(clause: str) -> bool:
    """"昨天说的网贷那件事你忘了吧": a reference with the ask at its end."""
    c = clause.strip()
    return is_reference(c) and bool(ASK_AT_END.search(c))


def with_references(parts: list[str], asks: list[str]) -> list[str]:
    """The asks and the references beside them: a clause next to an ask that points at what was said
    ("the thing about my loan I told you yesterday", "forget it") is part of the request."""
    asks = asks + [c for c in parts if c not in asks and (asks_by_reference(c) or BARE_ASK.match(c.strip()))]
    if not asks:
        return []
    out = set(asks)
    for i, c in enumerate(parts):
        if c in out or not is_reference(c):
            continue
        if (i > 0 and parts[i - 1] in asks) or (i + 1 < len(parts) and parts[i + 1] in asks):
            out.add(c)
    return [c for c in parts if c in out]


def strip_frame(text: str) -> str:
    """The words a reference names, its frame ("昨天说的…那件事你忘了吧") left out."""
    text = FRAME.sub(" ", text)
    for pattern, _days in WINDOWS:
        text = pattern.sub(" ", text)
    return text


def said_window(asks: list[str], now: datetime, tz: tzinfo) -> tuple[int, int] | None:
    """The epoch seconds [start, end) in which the request says the thing was said ("yesterday": that whole
    day in the user's zone), or None when it names no time."""
    text = " ".join(asks)
    for pattern, (earliest, latest) in WINDOWS:
        if pattern.search(text):
            today = now.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
            start, end = today - timedelta(days=earliest), today - timedelta(days=latest - 1)
            return int(start.timestamp()), int(end.timestamp())
    return None
