"""What the assistant said that the user may come back to: a recommendation, a list, a plan, or an answer to
the user's question. "What did you recommend?", "the restaurant in Rome you recommended", "你推荐的那家",
"the 7th job idea" ask for the assistant's words, which before lived only in a memory's metadata (the turn's
source text), where search does not look. Chit-chat ("You're welcome!") and the assistant's own questions
are not kept.

Pure: `kept(turns)` reads an exchange's turns and says what to keep, as the assistant's memory of that turn
(memory/assistant_turns.py writes it). A numbered list is kept whole, so an item is found by its number.
The cue words are data (KINDS); the first kind whose cue a reply holds names it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from . import clauses, has_cjk, is_question
from .lazy import lazy_compile
from .turns import small_talk

# kind -> (the cue in the reply, the English label, the Chinese label); "list" and "answer" have no cue words:
# a list is two or more numbered or bulleted lines, an answer is a substantial reply to a question or request.
KINDS: dict[str, tuple[str | None, str, str]] = {
    "list": (None, "Assistant listed", "助手列出"),
    "recommendation": (r"\b(?:i(?:'d| would)? (?:recommend|suggest)|recommend(?:ed|ation)?|suggest(?:ion)?|you (?:should|could|might) "
                       r"(?:try|go|visit|check out|consider)|try (?:the|a|an)|how about|consider|my (?:pick|top choice|favou?rite))\b"
                       r"|推荐|建议|可以试试|不妨|首选|值得一去|值得一试", "Assistant recommended", "助手推荐"),
    "plan": (r"\b(?:here'?s (?:a|the|your) (?:plan|schedule|itinerary|routine)|plan|itinerary|schedule|step \d|day \d|week \d)\b"
             r"|计划|安排|行程|第[一二三四五六七1-9]步|第[一二三四五六七1-9]天", "Assistant's plan", "助手给出的计划"),
    "answer": (None, "Assistant answered", "助手回答"),
}
_CUES = {kind: lazy_compile(cue, re.IGNORECASE) for kind, (cue, _, _) in KINDS.items() if cue}
_ITEM = lazy_compile(r"^\s*(?:\d{1,3}[.)、]|[-*•·]|[一二三四五六七八九十]+、|\(\d{1,3}\))\s*\S", re.MULTILINE)
_MIN_WORDS, _MIN_CJK = 6, 10  # a reply shorter than this is a reaction, not something to come back to
MAX_CHARS = 8000  # an assistant's essay is cut here (the schema holds 65,535 bytes; a list fits whole)


class AssistantMemory(NamedTuple):
    kind: str  # recommendation, list, plan or answer
    text: str  # "Assistant recommended: ..." (with what the user asked)


def _substantial(reply: str) -> bool:
    return len(re.findall(r"[A-Za-z]+", reply)) >= _MIN_WORDS or len(re.findall(r"[\u4e00-\u9fff]", reply)) >= _MIN_CJK


def kind_of(reply: str, asked: str = "") -> str | None:
    """What the reply is worth keeping as, or None: chit-chat, a question back, a short reaction."""
    parts = clauses(reply)
    told = [c for c in parts if not small_talk(c) and not is_question(c)]
    if not told or not _substantial(" ".join(told)):
        return None
    if len(_ITEM.findall(reply)) >= 2:
        return "list"
    for kind, cue in _CUES.items():
        if cue.search(reply):
            return kind
    asks = clauses(asked)
    return "answer" if asks and any(is_question(c) or _CUES["recommendation"].search(c) for c in asks) else None


def kept(turns: Sequence[dict[str, str]]) -> list[AssistantMemory]:
    """The assistant's memories of an exchange: each reply worth coming back to, labelled by its kind, with the
    user's words it answered."""
    out, asked = [], ""
    for turn in turns:
        content = (turn.get("content") or "").strip()
        if turn.get("role") != "assistant":
            asked = content
            continue
        kind = kind_of(content, asked)
        if kind is None or not content:
            continue
        zh = has_cjk(content)
        label = KINDS[kind][2 if zh else 1]
        body = content if len(content) <= MAX_CHARS else content[:MAX_CHARS] + "…"
        question = " ".join(asked.split())[:300]
        text = (f"{label}：{body}" + (f"（用户问：{question}）" if question else "")) if zh else \
               (f"{label}: {body}" + (f" (the user asked: {question})" if question else ""))
        out.append(AssistantMemory(kind, text))
    return out


# "the 7th job idea", "number 7", "the seventh one", "第7个", "第七条": the item of a list asked for by its number.
_ORDINALS = {w: i for i, w in enumerate(("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth").split(), 1)}
_ZH_DIGIT = {c: i for i, c in enumerate("一二三四五六七八九十", 1)}
_ORDINAL = lazy_compile(r"\b(?:(?P<n>\d{1,3})(?:st|nd|rd|th)|(?:number|no\.|#|item)\s*(?P<m>\d{1,3})|(?P<w>" + "|".join(_ORDINALS) + r"))\b"
                        r"|第(?P<z>\d{1,3}|[一二三四五六七八九十])(?:个|条|项|点|家|种|份|本|部)?", re.IGNORECASE)


def ordinal(query: str) -> int | None:
    """The list item a question names by its number, or None."""
    m = _ORDINAL.search(query or "")
    if not m:
        return None
    if m["w"]:
        return _ORDINALS[m["w"].lower()]
    z = m["z"]
    return int(m["n"] or m["m"] or (z if z and z.isdigit() else _ZH_DIGIT.get(z or "", 0))) or None


def has_item(text: str, n: int) -> bool:
    """Whether `text` holds a list with an item numbered `n` ("7. ...", "7) ...", "七、...")."""
    zh = "一二三四五六七八九十"[n - 1] if 1 <= n <= 10 else None
    return bool(re.search(rf"(?m)^\s*(?:\(?{n}[.)、]|{zh}、)" if zh else rf"(?m)^\s*\(?{n}[.)、]", text or ""))
