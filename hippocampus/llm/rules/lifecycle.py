"""Offline rules for the lifecycle's judgements: the ContradictionJudge and the MemoryReviewer.

A degraded judge that is right where it speaks: it knows a few single-valued slots of the user
(home, workplace, age, name), in English and Chinese, and says a new fact supersedes an older
one only when both state the same slot of the user himself with different values. Everything
else, moods and other changes over time included, is no contradiction.
"""

from __future__ import annotations

import re
from typing import Any

from ...models import Category
from . import rule

_SUBJECT_EN = re.compile(r"^\s*(the user|user|i|my name)\b(?!'s)", re.IGNORECASE)
_SUBJECT_ZH = re.compile(r"^\s*(用户|我)(?!的)")
# Words a statement may open with before its subject ("Actually I moved to Rome", "其实我搬到了上海").
_LEAD = re.compile(r"^\s*(?:(?:actually|well|so|oh|btw|by the way|also|and|but|now|ok|okay|anyway|guess what|update)\b[\s,:-]*)+"
                   r"|^\s*(?:其实|另外|对了|还有|而且|然后|不过|告诉你)+[，,\s]*", re.IGNORECASE)
_CITY = r"([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)"
_SLOTS: list[tuple[str, re.Pattern[str]]] = [
    ("home", re.compile(rf"\b(?:lives?|living|is based|moved|has moved|relocated)\b(?: now)? (?:in|to) {_CITY}")),
    ("home", re.compile(r"(?:住在|搬到了?|定居在?)([\u4e00-\u9fff]{2,4}?)(?:市|，|。|的|$|\s)")),
    ("work", re.compile(r"\bworks? (?:at|for) ([A-Z][\w&'-]+(?: [A-Z][\w&'-]+)*)")),
    ("work", re.compile(r"在([\u4e00-\u9fff\w]{2,8}?)(?:工作|上班)")),
    ("age", re.compile(r"\b(\d{1,3}) years old\b|\baged (\d{1,3})\b", re.IGNORECASE)),
    ("age", re.compile(r"(\d{1,3}) ?岁")),
    ("name", re.compile(r"\bname is ([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)")),
    ("name", re.compile(r"(?:我叫|用户叫|名字是)([\u4e00-\u9fff]{2,3})")),
]
_CORE_WORTHY = re.compile(
    r"\bmy name is\b|\bi'?m called\b|\bcall me\b|\bbirthday\b|\bborn on\b|\b(is|are) called\b|\bnamed\b"
    r"|我叫|我的名字|名字是|生日|出生于|叫做",
    re.IGNORECASE,
)


def core_worthy(text: str, category: Category) -> bool:
    """The degraded MemoryReviewer's PROMOTE (without a model): names and birthdays the
    user stated, and standing preferences. Never a delete: below the archive line a memory is
    archived, never judged."""
    return category is Category.PREFERENCE or bool(_CORE_WORTHY.search(text))
_NUMBERED = re.compile(r"^\s*(\d+)\.\s*(.*?)(?:\s*\(\d{4}-\d{2}-\d{2}\))?\s*$", re.DOTALL)


def slots(text: str) -> dict[str, str]:
    """The user's single-valued slots a fact states ({"home": "porto"}); empty when the fact is
    not about the user himself ("The user's sister lives in Lyon")."""
    text = _LEAD.sub("", text)
    if not (_SUBJECT_EN.search(text) or _SUBJECT_ZH.search(text)):
        return {}
    out: dict[str, str] = {}
    for name, pattern in _SLOTS:
        m = pattern.search(text)
        if m and name not in out:
            out[name] = next(g for g in m.groups() if g).strip().lower()
    return out


@rule("contradiction_judge")
def _contradiction_judge(inputs: dict[str, Any]) -> dict[str, Any]:
    from ...text.slots import corrected, read  # the statements' reader (issue 55): any wording, either language

    text = str((inputs.get("new_fact") or {}).get("text") or "")
    new, stated = slots(text), read(text)
    superseded, why = [], []
    for line in inputs.get("older_facts") or []:
        m = _NUMBERED.match(str(line))
        if not m or not (new or stated):
            continue
        old = slots(m.group(2))
        changed = [s for s in new if s in old and old[s] != new[s]]
        pairs = corrected(read(m.group(2)), stated)
        if changed:
            superseded.append(int(m.group(1)))
            why.append(f"{changed[0]}: {old[changed[0]]} -> {new[changed[0]]}")
        elif pairs:
            superseded.append(int(m.group(1)))
            why.append(f"{pairs[0][0].attribute}: {pairs[0][0].value} -> {pairs[0][1].value or '(taken back)'}")
    return {"superseded": superseded, "reason": "; ".join(why) or "rules: no single-valued fact of the user changed"}


@rule("memory_reviewer")
def _memory_reviewer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The degraded reviewer: promote what is core-worthy by pattern (names, birthdays, standing
    preferences) at the high trigger; keep everything else; never delete."""
    memory = inputs.get("memory") or {}
    try:
        category = Category(str(memory.get("category") or "experience"))
    except ValueError:
        category = Category.EXPERIENCE
    if inputs.get("trigger") == "high" and core_worthy(str(memory.get("text") or ""), category):
        return {"action": "promote", "queries": [], "reason": "rules: a name, birthday or standing preference"}
    return {"action": "keep", "queries": [], "reason": "rules: no review beyond core-worthy patterns"}
