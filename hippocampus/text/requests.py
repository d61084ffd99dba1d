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

STANDING = lazy_compile(
    r"\b(?:stop|quit) (?:giving|sending|using|suggesting|recommending|showing|adding|including|writing|asking|calling|telling)\b"
    r"|\b(?:don'?t|do not|never|no more) (?:give|send|use|suggest|recommend|show|add|include|write|call|tell)\b(?! me (?:that|this|it)\b)"
    r"|\bkeep (?:your |the |all |my )?(?:answers?|responses?|replies|explanations?|messages?|summaries|emails?|code|it|things) "
    r"(?:short|brief|concise|simple|under|to|in|casual|formal)\b"
    r"|\b(?:from now on|going forward|in (?:the )?future|always|every time)\b.{0,60}\b(?:answer|reply|respond|use|write|give|show|"
    r"include|explain|talk|call|suggest|recommend|format|keep)\b"
    r"|\b(?:answer|reply|respond|write|talk to me|speak to me) (?:to me )?in (?:[A-Z][a-z]+|plain|simple)\b"
    r"|\b(?:i(?:'d)? prefer|i like|i want) (?:short|shorter|brief|concise|detailed|longer|simple) (?:answers?|responses?|replies|explanations?)\b"
    r"|(?:以后|今后|从现在开始|往后|每次)(?:你|请|都|就|也)*(?:回答|回复|用|别|不要|给我|跟我|叫我|称呼我|说话|推荐|提醒|写)"
    r"|(?<![我他她])(?:别|不要|不用)再?(?:给我|跟我|用|推荐|发|提)"
    r"|回答(?:要|请|都)?(?:简短|简洁|详细|短)|(?:用|说)(?:中文|英文|英语|普通话)(?:回答|回复|跟我说|和我说)",
    re.IGNORECASE,
)
_ONE_OFF = lazy_compile(r"^(?:shorter|simpler|longer|more detail),? please$|^(?:简短|简单|说简单)一?点$", re.IGNORECASE)


def standing_request(clause: str) -> bool:
    """The clause asks the assistant to answer some way for good ("stop giving me Windows shortcuts")."""
    c = clause.strip()
    return bool(STANDING.search(c)) and not _ONE_OFF.match(c)
