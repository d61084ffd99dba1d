"""Slot values in one form for comparison (issue 55): a value said in any wording or language ("$6,800" and
"6.8k", "三十五" and "35", "南京鼓楼区" and "Nanjing") compares equal to itself, so that a correction finds
the value it takes back. Pure; the gazetteer and the synonyms are tables (slot_tables.py)."""

from __future__ import annotations

import functools
import re
import unicodedata

from .lazy import lazy_compile
from .slot_tables import ATTRIBUTES, CANONICAL, GAZETTEER, ZH_DIGITS

_NUMBER = lazy_compile(r"^[$¥€£]?\s?(\d[\d,]*(?:\.\d+)?)\s?([kK]|万|千)?")
_TRIM_ZH = lazy_compile(r"(?:了|的|工作|上班|生活|附近|这边|那边|住|呢|啊|吧|八年|\d+年|[一二三四五六七八九十几]+年).*$")


@functools.cache
def _aliases() -> dict[str, tuple[str, str]]:
    """Each spelling (lower case) -> (canonical, kind)."""
    return {a.lower(): (canon, kind) for canon, (kind, aliases) in GAZETTEER.items() for a in (canon, *aliases)}


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if not text or any(ch not in ZH_DIGITS and ch != "十" for ch in text):
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)
    return int("".join(str(ZH_DIGITS[ch]) for ch in text))


def canonical(value: str | None, attribute: str = "") -> str | None:
    """One form of a value for comparison: NFKC, lower case, no edge punctuation or article, a number's digits
    ("$6,800" -> "6800", "6.8k" -> "6800", "三十五" -> "35"), a gazetteer place or company by its canonical name
    ("南京鼓楼区" -> "nanjing"), a known synonym by its canonical word ("吃素" -> "vegetarian")."""
    if value is None:
        return None
    v = unicodedata.normalize("NFKC", value).strip(" \t.,;:!?\"'“”‘’()（），。！？、").strip()
    v = re.sub(r"^(?:the|a|an)\s+", "", v, flags=re.IGNORECASE)
    v = re.sub(r"\s+(?:now|anymore|any more|these days|again)$", "", v, flags=re.IGNORECASE)
    low = v.lower()
    policy = ATTRIBUTES.get(attribute)
    if attribute == "age" or (policy is not None and policy.money):
        n = _zh_number(low) if attribute == "age" else None
        m = _NUMBER.match(low) if n is None else None
        if m:
            num = float(m[1].replace(",", "")) * {"k": 1000, "万": 10000, "千": 1000}.get((m[2] or "").lower(), 1)
            n = int(num) if num == int(num) else None
            if n is None:
                return f"{num:g}"
        return str(n) if n is not None else low
    for length in range(len(low), 1, -1):  # the longest gazetteer spelling the value starts with
        if low[:length] in _aliases() and (length == len(low) or not low[length].isascii() or not low[length].isalnum()):
            return _aliases()[low[:length]][0]
    if any("\u4e00" <= ch <= "\u9fff" for ch in low) and attribute in ("home", "employer", "school"):
        low = _TRIM_ZH.sub("", low) or low
    return CANONICAL.get(low, low)


def kind_of(value: str | None) -> str:
    """"city", "company", "number" or "" for a canonical value."""
    if value is None:
        return ""
    if value.replace(".", "", 1).isdigit():
        return "number"
    return next((k for canon, (k, _) in GAZETTEER.items() if canon == value), "")


def same_value(a: str | None, b: str | None) -> bool:
    """Two canonical values name the same thing: equal, or one the other's first words ("portland" / "portland
    oregon", "sean" / "sean li"), or one the other's start in Chinese ("朝阳" / "朝阳区")."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    if kind_of(short) == "number":
        return False
    return long.startswith(short + " ") or (not short.isascii() and len(short) >= 2 and long.startswith(short))
