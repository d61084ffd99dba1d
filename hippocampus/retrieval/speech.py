"""What a stored text does: state something, or ask, request or remark (issue 55).

Why: a chat hook keeps turns the write rules are unsure of ("鸭血粉丝汤哪家好" is kept "when unsure"),
an import or `infer=False` keeps every turn, and a question to the assistant shares the words and the
form of a question about the user. With e5-small "Can you suggest a name for a new kitten?" scored
above "We've got a tabby called Biscuit" for "What's our cat's name?", and "What jobs are good for
people who like nights?" above the user's own job: the embedding matches a question with a question.
A question, a request or a remark answers nothing, so the answer stage (stages.py) lowers it below the
statements of comparable relevance; it stays findable when it is the only match.

Records carry no such label (the write path's `write_reason` says why a turn was kept, not what it is,
and `infer=False` writes none), so the act is read from the text at search time: a text is a
*statement* as soon as one of its clauses states something, otherwise a *question* (English and
Chinese question forms: text/__init__.py `is_question`, plus 哪家, 好不好, "any tips"), a *request*
(an imperative to the assistant: text/turns.py `content_request`, `assistant_request`, "can you",
"帮我") or a *remark* (small talk, reactions, weather, remarks about the conversation). A request to
remember ("记住我对芒果过敏") is a statement. Pure functions; the answer is cached per text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from .. import text as T
from ..text import turns

Act = Literal["statement", "question", "request", "remark"]

# Question forms `is_question` does not know: "鸭血粉丝汤哪家好", "这样好不好", "any tips for ...".
_QUESTION_MORE = re.compile(r"哪家|哪儿|哪种|哪款|好不好|行不行|对不对|可以吗|咋|啥|怎样|^(?:any (?:tips|ideas|suggestions|recommendations))\b",
                            re.IGNORECASE)
# Imperatives to the assistant that turns.py leaves to the model when a first person is in them
# ("帮我推荐一个离我家近的牙医", "can you help me plan my week"): asks, not facts about the speaker.
_REQUEST = re.compile(r"^(?:(?:can|could|would|will) you|please|help me|tell me|give me|show me|find me|let'?s|recommend|suggest)\b"
                      r"|^(?:请你?|麻烦你?|帮我|给我|替我|你能|你可以|能不能|可不可以|推荐|介绍一下)", re.IGNORECASE)
_SPEAKER = re.compile(r"^\s*[A-Z][\w .'-]{0,30}:\s+")  # "Caroline: ..." (a LoCoMo turn stored raw)


@lru_cache(maxsize=8192)
def act_of(text: str) -> Act:
    """'statement', 'question', 'request' or 'remark': a text is a statement when any clause states something."""
    body = _SPEAKER.sub("", text or "", count=1)
    if turns.asks_to_remember(body):
        return "statement"
    turn = turns.read_turn([{"role": "user", "content": body}])
    if not turn.parts or turns.greeting(turn) or turns.laughter(turn) or turns.conversation_remark(turn) or turns.weather_remark(turn):
        return "remark"
    if turns.content_request(turn) or turns.assistant_request(turn):
        return "request"
    acts = [_clause_act(c) for c in turn.parts if not turns.small_talk(c)]
    if not acts or "statement" in acts:
        return "statement" if acts else "remark"
    return "request" if "request" in acts else "question" if "question" in acts else "remark"


def _clause_act(clause: str) -> Act:
    c = clause.strip()
    if _REQUEST.search(c):
        return "request"
    if T.is_question(c) or _QUESTION_MORE.search(c):
        return "question"
    if turns.remark(c) or turns.reaction(c):
        return "remark"
    return "statement"


def answers_nothing(text: str) -> bool:
    """A question, a request or a remark: nothing in it answers a question."""
    return act_of(text) != "statement"
