"""Offline rules for the Merger and the Separator: a deterministic, honestly degraded mode.

Similarity cannot tell two dentist visits apart (e5 scores them 0.91-0.98, like true
duplicates), so these rules only call a pair the same event when one text says
nothing the other does not: equal after normalisation, or one's content words are
(almost) a subset of the other's, with no conflicting numbers and no relative-time
words ("today", "昨天") on different days (the time policy of consolidation/rules.py, checked
before any word comparison, so identical words never decide alone). Anything else is two events, and the
Separator adds each record's distinguishing context (date, chat, differing words).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from typing import Any

from ...text import CJK
from ...text.days import event_day, strip_day_tags, times_allow_one_event
from . import rule

_TOKEN = re.compile(rf"[{CJK}]|[0-9]+(?:[.:][0-9]+)*|[^\W\d_{CJK}]+", re.UNICODE)
_NUMBER = re.compile(r"[0-9]+(?:[.:][0-9]+)*")
_CN_NUMBER = re.compile(r"[零一二两三四五六七八九十百千万]+(?=[号日月点天年岁个次元块])")
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*")
_STOP_EN = set(
    "a an the to of and or i me my mine we our us you your he she it its they them their is am are was were be been "
    "being do did does have has had just really so very that this these those there here on at in for with by from "
    "about as but also too then than into up out over again some any all not no yes".split()
)
_STOP_ZH = set("的了呢吗啊吧呀哦嘛着过是也都就很在和与及并又还我你他她它们这那个一些")
# Words a paraphrase may swap without changing the event ("搬到" / "搬去", "got" / "had").
_LIGHT = set("到去做在从往向把被给让跟和与同对为于以其要会能想得地着过个位名次将已经把来") | set(
    "went go goes going got get gets getting had have did do does made make makes took take".split()
)
SAME_EVENT_OVERLAP = 0.6  # share of the shorter text's content words found in the longer one
LOOKALIKE_OVERLAP = 0.5  # below this, two texts cannot be confused: the Separator leaves them alone


def normalise(text: str) -> str:
    """NFKC, lower case, punctuation and extra spaces removed: for duplicate checks only."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in text)
    return " ".join(text.split())


def content_tokens(text: str) -> set[str]:
    """Words for English, single characters for Chinese, numbers whole; stop words dropped."""
    tokens = set(_TOKEN.findall(normalise(text)))
    return {t for t in tokens if t not in _STOP_EN and t not in _STOP_ZH}


def numbers(text: str) -> Counter[str]:
    """Numbers with their counts ("3月3日" has 3 twice), Arabic and Chinese."""
    norm = unicodedata.normalize("NFKC", text or "")
    return Counter(_NUMBER.findall(norm)) + Counter(_CN_NUMBER.findall(norm))


def _substantial(tokens: list[str]) -> bool:
    """Does a differing run carry meaning (a name, a place, a number, a content word)?"""
    return any(t not in _STOP_EN and t not in _STOP_ZH and t not in _LIGHT for t in tokens)


def substitutions(ta: str, tb: str) -> list[tuple[str, str]]:
    """Aligned runs where one text says X and the other says Y instead (both meaningful)."""
    xa, xb = _TOKEN.findall(normalise(ta)), _TOKEN.findall(normalise(tb))
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, xa, xb, autojunk=False).get_opcodes():
        if op == "replace" and _substantial(xa[i1:i2]) and _substantial(xb[j1:j2]):
            out.append((_glue(xa[i1:i2]), _glue(xb[j1:j2])))
    return out


def _day(value: Any) -> str:
    return event_day(value)


def same_event(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, str]:
    """The offline judgement for a pair of memory dicts (text, time, ...): (same, reason)."""
    ta, tb = str(a.get("text", "")), str(b.get("text", ""))
    na, nb = normalise(ta), normalise(tb)
    if not na or not nb:
        return False, "an empty text cannot be judged"
    one, why = times_allow_one_event(ta, a.get("time"), tb, b.get("time"))
    if not one:  # checked before any word comparison: the same words on two days are two events
        return False, why
    if na == nb:
        return True, "the same text after normalisation (the times allow one event)"
    nums_a, nums_b = numbers(ta), numbers(tb)
    if (nums_a - nums_b) and (nums_b - nums_a):
        return False, f"conflicting numbers or dates ({_show(set(nums_a - nums_b))} / {_show(set(nums_b - nums_a))})"
    if na in nb or nb in na:
        return True, "one text contains the other"
    ca, cb = content_tokens(ta), content_tokens(tb)
    if not ca or not cb:
        return False, "no content words to compare"
    swapped = substitutions(ta, tb)
    if swapped:
        return False, "one says " + "; ".join(f"{x!r} where the other says {y!r}" for x, y in swapped[:3])
    overlap = len(ca & cb) / min(len(ca), len(cb))
    if overlap >= SAME_EVENT_OVERLAP:
        return True, f"one text's content is contained in the other's (overlap {overlap:.2f})"
    return False, f"low word overlap ({overlap:.2f})"


def union_text(ta: str, tb: str) -> str:
    """A de-duplicated union: when one text's content words cover the other's, that text;
    otherwise the first text, then the other's sentences it does not already say."""
    na, nb = normalise(ta), normalise(tb)
    if nb in na:
        return ta.strip()
    if na in nb:
        return tb.strip()
    ca, cb = content_tokens(ta), content_tokens(tb)
    if cb <= ca:
        return ta.strip()
    if ca <= cb:
        return tb.strip()
    out, have = ta.strip(), na
    for sentence in _SENTENCE.split(tb.strip()):
        ns = normalise(sentence)
        if not ns or ns in have:
            continue
        if not out.endswith(tuple(".!?。！？；;")):
            out += "。" if re.match(rf"[{CJK}]", out[-1:]) else "."
        out += ("" if re.match(rf"[{CJK}]", sentence.strip()[:1]) else " ") + sentence.strip()
        have += " " + ns
    return out


def _join(*parts: Any) -> str:
    seen: list[str] = []
    for part in parts:
        p = str(part or "").strip()
        if p and all(normalise(p) not in normalise(s) for s in seen):
            seen = [s for s in seen if normalise(s) not in normalise(p)]
            seen.append(p)
    return "; ".join(seen)


def _show(tokens: set[str], n: int = 4) -> str:
    return " ".join(sorted(tokens)[:n])


def _glue(tokens: list[str]) -> str:
    out = ""
    for t in tokens:
        if out and not (re.match(rf"[{CJK}]", t) and re.search(rf"[{CJK}]$", out)):
            out += " "
        out += t
    return out


def differing_segments(ta: str, tb: str) -> tuple[list[str], list[str]]:
    """What only `ta` says and what only `tb` says, as readable runs of words (stop words kept)."""
    xa, xb = _TOKEN.findall(normalise(ta)), _TOKEN.findall(normalise(tb))
    only_a: list[str] = []
    only_b: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, xa, xb, autojunk=False).get_opcodes():
        if op in ("replace", "delete") and content_tokens(" ".join(xa[i1:i2])):
            only_a.append(_glue(xa[i1:i2]))
        if op in ("replace", "insert") and content_tokens(" ".join(xb[j1:j2])):
            only_b.append(_glue(xb[j1:j2]))
    return only_a, only_b


@rule("merger")
def merge(inputs: dict[str, Any]) -> dict[str, Any]:
    a, b = dict(inputs.get("memory_a") or {}), dict(inputs.get("memory_b") or {})
    same, reason = same_event(a, b)
    if not same:
        return {"same_event": False, "text": "", "context": "", "thing": "", "reason": reason}
    text = union_text(str(a.get("text", "")), str(b.get("text", "")))
    return {
        "same_event": True,
        "text": text,
        "context": _join(a.get("context"), b.get("context")),
        "thing": _join(a.get("thing"), b.get("thing")) or text,
        "reason": reason,
    }


_strip_tags = strip_day_tags


def _where(m: dict[str, Any]) -> str:
    return f"{_day(m.get('time')) or 'an undated episode'} in chat {m.get('chat_id') or m.get('chatid') or '?'}"


@rule("separator")
def separate(inputs: dict[str, Any]) -> dict[str, Any]:
    """Look-alikes (half the words shared) keep their text (a date tag an older run appended is taken off:
    the day is the memory's `time`, which every face shows) and get their distinguishing details in
    `context` ("not the episode of 2027-01-25 in chat c2; only here: ..."); pairs that merely embed close
    but share few words are left alone."""
    a, b = dict(inputs.get("memory_a") or {}), dict(inputs.get("memory_b") or {})
    ta, tb = str(a.get("text", "")).strip(), str(b.get("text", "")).strip()
    ca, cb = content_tokens(_strip_tags(ta)), content_tokens(_strip_tags(tb))
    overlap = len(ca & cb) / max(1, min(len(ca), len(cb)))
    if overlap < LOOKALIKE_OVERLAP:  # e5 puts many unrelated same-language pairs this close
        return {"text_a": ta, "text_b": tb, "context_a": str(a.get("context") or ""), "context_b": str(b.get("context") or ""),
                "reason": f"not look-alikes (word overlap {overlap:.2f}): nothing to tell apart"}
    only_a, only_b = differing_segments(_strip_tags(ta), _strip_tags(tb))

    def context(own: dict[str, Any], mine: list[str], other: dict[str, Any]) -> str:
        note = f"not the episode of {_where(other)}"
        if mine:
            note += f"; only here: {', '.join(mine[:4])}"
        return _join(own.get("context"), note)

    return {
        "text_a": _strip_tags(ta),  # the day is metadata (`time`), shown by the faces; never appended to a text
        "text_b": _strip_tags(tb),
        "context_a": context(a, only_a, b),
        "context_b": context(b, only_b, a),
        "reason": f"distinct episodes: {_where(a)} vs {_where(b)}",
    }
