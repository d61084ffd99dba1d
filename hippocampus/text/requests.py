"""Requests that carry a preference (issue 55): "can you stop giving me Windows shortcuts? I'm on a Mac", "also
can you keep answers short?", "以后回答简短一点", "别再给我推荐辣的菜了". Put as a request or a question, they
still say how the user wants to be answered, for good: the turn is kept whole, as a preference (the fact beside
it, "I'm on a Mac", with it), never cut down to the fact or dropped as a request to the assistant.

A one-off remark about this answer ("shorter, please", "简短一点") is not one: a standing request names answers in
general, a habit of the assistant's ("stop giving me…", "don't use…"), or a time to come ("from now on", "以后").
"""

from __future__ import annotations

import re

from .lazy import lazy_compile

# A habit of the assistant's the user wants stopped: standing only with a reason of the user's beside it ("I'm on a
# Mac") or a word that says for good ("anymore", "ever", "以后"); alone ("stop giving me bullet points pls") it is a
# remark about this answer.
STOP = lazy_compile(
    r"\b(?:stop|quit) (?:giving|sending|using|suggesting|recommending|showing|adding|including|writing|asking|calling|telling)\b"
    r"|\b(?:don'?t|do not|never|no more) (?:give|send|use|suggest|recommend|show|add|include|write|call|tell)\b(?! me (?:that|this|it)\b)"
    r"|(?<![我他她])(?:别|不要|不用)再?(?:给我|跟我|用|推荐|发|提)",
    re.IGNORECASE,
)
FOR_GOOD = lazy_compile(r"\b(?:anymore|any more|ever again|ever|again|from now on|in future|going forward)\b|以后|今后|再也|再", re.IGNORECASE)
# How to answer in general, for good by its words: "keep answers short", "from now on…", "answer in English", "以后回答简短一点".
ALWAYS = lazy_compile(
    r"\bkeep (?:your |the |all |my )?(?:answers|responses|replies|explanations|messages|summaries|emails) "
    r"(?:short|brief|concise|simple|under|to|in|casual|formal)\b"
    r"|\b(?:from now on|going forward|in (?:the )?future|always|every time)\b.{0,60}\b(?:answer|reply|respond|use|write|give|show|"
    r"include|explain|talk|call|suggest|recommend|format|keep)\b"
    r"|\b(?:answer|reply|respond|write|talk to me|speak to me) (?:to me )?in (?:[A-Z][a-z]+|plain|simple)\b"
    r"|\b(?:i(?:'d)? prefer|i like|i want) (?:short|shorter|brief|concise|detailed|longer|simple) (?:answers?|responses?|replies|explanations?)\b"
    r"|(?:以后|今后|从现在开始|往后|每次)(?:你|请|都|就|也)*(?:回答|回复|用|别|不要|给我|跟我|叫我|称呼我|说话|推荐|提醒|写)"
    r"|回答(?:要|请|都)?(?:简短|简洁|详细|短)|(?:用|说)(?:中文|英文|英语|普通话)(?:回答|回复|跟我说|和我说)",
    re.IGNORECASE,
)
_ONE_OFF = lazy_compile(r"^(?:shorter|simpler|longer|more detail),? please$|^(?:简短|简单|说简单)一?点$", re.IGNORECASE)


def standing_request(clause: str, others: list[str] | tuple[str, ...] = ()) -> bool:
    """The clause asks the assistant to answer some way for good ("keep answers short"; "stop giving me Windows
    shortcuts" with "I'm on a Mac" among the `others` clauses of the turn)."""
    from . import has_first_person, is_question

    c = clause.strip()
    if _ONE_OFF.match(c):
        return False
    if ALWAYS.search(c):
        return True
    return bool(STOP.search(c)) and (bool(FOR_GOOD.search(c)) or any(
        has_first_person(o) and not is_question(o) for o in others if o != clause))


def prefers(parts: list[str]) -> bool:
    """A clause of the turn (its `parts`) states how the user wants to be answered for good."""
    return any(standing_request(c, parts) for c in parts)


def prefers_text(text: str) -> bool:
    """`prefers` over the clauses of `text`."""
    from . import clauses

    return prefers(clauses(text))
