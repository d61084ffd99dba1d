"""The fact guard's pure functions: which facts a text states, which of them another text lost,
and a deterministic union of two texts that loses none.

A *fact* is what a rewrite must not silently drop: numbers with their units ("3 km", "42%",
"2 tablets", "¥300", "三公里"), dates and times ("May 3", "2024-05-01", "下午三点", "14:30"),
names and rare terms (a capitalised word not at a sentence start, an acronym, a word with
digits, "iPhone"), Chinese nouns (jieba.posseg, 2+ characters) and English nouns (the words
after a determiner or a possessive: "my knees", "a window seat"). Keys are normalised:
"3 km", "3km", "3 kilometres" and "三公里" are one fact, "3pm" and "下午3点" one time.

An output keeps a source fact when it states the same key (a number of the same value and
unit, or any unit when the source had none; a date with at least the source's year, month
and day; a time with the same hour on a 12-hour clock and minute), or contains the fact's
own words (case-insensitive, not inside a longer word or number); an English noun is kept
by any word of the same stem ("knee" keeps "knees", wherever it stands). Extraction lives in
fact_extract.py; this module is the API, the matching and the union. Left out on purpose: relative days
("today", "昨天"; a merge may resolve them), "one"/"一个" (articles), common words. A false
positive (jieba tags "喝咖啡" nr) costs a retry or a repeated clause, never a lost fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .fact_extract import CN_NUM_CHARS, IS_CJK, Fact, cn_int, en_stem, extract, fold, unit_name

__all__ = ["Fact", "cn_int", "facts", "kept", "missing", "replaced", "supplement", "union"]

_CLAUSE_END = re.compile(r"[。！？!?；;，、\n]+|,(?!\d)|\.(?=\s|$)")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_TERMINAL = tuple("。！？!?；;，,、.:：")


def facts(text: str) -> set[Fact]:
    """The facts a text states (see the module docstring), each once, with normalised keys."""
    return set(extract(text or ""))


def missing(sources: Sequence[str], output: str, loose_units: bool = False) -> list[Fact]:
    """The facts of the sources that the output does not keep, in source order, each once."""
    out: list[Fact] = []
    seen: set[Fact] = set()
    for source in sources:
        for fact in sorted(extract(source or ""), key=lambda f: (f.start, f.end)):
            if fact not in seen and not kept(fact, output or "", loose_units):
                seen.add(fact)
                out.append(fact)
    return out


def kept(fact: Fact, output: str, loose_units: bool = False) -> bool:
    """Does the output keep this fact: the same key, or the fact's own words? A number with a
    unit needs the same value with that unit (right after it, or among the next three words:
    "2 kids" is kept by "2 young kids", not by "2"); `loose_units` also accepts the value alone
    or a unit the source lacked ("6" and "6 years old", for a distillation's paraphrase)."""
    if fact.kind == "number":
        value, unit = fact.key.split("|", 1)
        for other in extract(output):
            if other.kind == "number" and other.key.split("|", 1)[0] == value:
                other_unit = other.key.split("|", 1)[1]
                if not unit or other_unit == unit or (loose_units and not other_unit) or unit in _units_after(output, other.end):
                    return True
    elif fact.kind == "noun" and fact.key.startswith("en:"):
        return fact.key[3:] in {en_stem(w.lower()) for w in _LATIN_WORD.findall(output)}
    elif any(_same(fact, other) for other in extract(output)):
        return True
    return _contains(fold(output), fold(fact.text))


def _units_after(text: str, pos: int) -> set[str]:
    return {unit_name(w) for w in re.findall(r"[A-Za-z]+", text[pos : pos + 40])[:3]}


def replaced(fact: Fact, output: str, context: str) -> bool:
    """Does the output replace this number, date or time by another value of the same kind
    (a number: the same unit) that `context` states? A correction the conversation made
    ("the interview moved to Friday") supersedes the old value rather than losing it."""
    if fact.kind not in ("number", "date", "time"):
        return False
    unit = fact.key.split("|", 1)[-1] if fact.kind == "number" else ""
    return any(
        other.kind == fact.kind and not _same(fact, other) and kept(other, context)
        and (fact.kind != "number" or other.key.split("|", 1)[1] == unit)
        for other in extract(output)
    )


def union(a: str, b: str) -> str:
    """The deterministic fallback: the longer text, then the clauses of the other one that
    add a fact the longer one lacks (in their order, once each). Keeps every fact of both."""
    a, b = (a or "").strip(), (b or "").strip()
    return supplement(a, b) if len(a) >= len(b) else supplement(b, a)


def supplement(base: str, other: str, note: tuple[str, str] | None = None) -> str:
    """`base` plus the clauses of `other` that hold a fact `base` lacks. With a `note`
    (English, Chinese), the added clauses go in brackets after it: "… (earlier: …)"."""
    base, other = (base or "").strip(), (other or "").strip()
    bounds = _clause_bounds(other)
    added: list[str] = []
    result = base
    for fact in missing([other], base):
        if kept(fact, result):
            continue
        start = max(s for s, _e in bounds if s <= fact.start)
        end = min(e for _s, e in bounds if e >= fact.end)
        segment = other[start:end].strip()
        if segment and segment not in added:
            added.append(segment)
            result = _render(base, added, note)
    if missing([other], result):  # a fact the clause lookup could not place: keep the whole text
        result = _render(base, [other], note)
    return result


def _render(base: str, segments: list[str], note: tuple[str, str] | None) -> str:
    zh = bool(IS_CJK.search("".join(segments)))
    if note:
        inner = ("；" if zh else "; ").join(segments)
        return f"{base}（{note[1]}：{inner}）" if zh else f"{base} ({note[0]}: {inner})".strip()
    out = base
    for seg in segments:
        cjk = bool(IS_CJK.match(seg[:1]) or IS_CJK.match(out[-1:]))
        out += ("" if not out else ("" if cjk else " ") if out.endswith(_TERMINAL) else "；" if cjk else "; ") + seg
    return out


def _clause_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each clause, the delimiters left out."""
    cuts = [(m.start(), m.end()) for m in _CLAUSE_END.finditer(text)]
    return list(zip([0] + [e for _s, e in cuts], [s for s, _e in cuts] + [len(text)]))


# ------------------------------------------------------------------ matching
def _same(fact: Fact, other: Fact) -> bool:
    if fact.kind != other.kind:
        return False
    if fact.kind == "number":
        return fact.key == other.key
    if fact.kind == "date" and (fact.key.startswith("weekday") or other.key.startswith("weekday")):
        return fact.key == other.key
    if fact.kind == "date":
        return all(x == "" or x == y for x, y in zip(fact.key.split("-"), other.key.split("-")))
    if fact.kind == "time":
        (h1, m1), (h2, m2) = fact.key.split(":"), other.key.split(":")
        return int(h1) % 12 == int(h2) % 12 and m1 == m2
    return fact.key == other.key


def _glued(x: str, y: str) -> bool:
    """Would these two neighbours be one word or number ("Ann|a", "1|3", "十|二")?"""
    def numeral(c: str) -> bool:
        return c.isdigit() or c in CN_NUM_CHARS
    return bool(x and y) and ((x.isascii() and x.isalnum() and y.isascii() and y.isalnum()) or (numeral(x) and numeral(y)))


def _contains(haystack: str, needle: str) -> bool:
    """Is `needle` in `haystack`, not as a part of a longer word or number?"""
    if not needle:
        return True
    start = haystack.find(needle)
    while start >= 0:
        before, after = haystack[start - 1 : start], haystack[start + len(needle) : start + len(needle) + 1]
        if not _glued(before, needle[0]) and not _glued(needle[-1], after):
            return True
        start = haystack.find(needle, start + 1)
    return False
