"""The subject stage: a question about the user passes over memories about someone else, and the reverse.

Why: with the bundled e5-small, "where does alice live?" (alice being the user) scored "My sister Ana
lives in Lisbon" 0.785 and "I moved to Berlin in May" 0.749: the embedding matches "live" with
"lives" and has no notion of whose life it is. A person reads the subject first. So each text gets
one of four subjects, from plain markers in English and Chinese:

- *self*: the user; first person ("I", "me", "my", "我") or the user's own id as a word ("alice");
- *other*: people around the user; a relation named through a possessive ("my sister", "alice's
  husband", "我妹妹") and, in a memory only, anyone's relations ("his wife", "她的朋友") and
  third-person pronouns ("she", "他");
- *both*: a memory with both ("I visited my sister in Lisbon");
- none: neither.

A relation phrase is read before the first person it holds, so "my sister" is *other*, not *self*.
When the question is *self* or *other* and a memory is the opposite (not *both*, not none), the
memory's score loses `rank_subject_weight` (default 0.1; the hit's `subject` signal). Neither pronouns
nor a third person's relations make a question *other*: in "would Caroline keep it on her shelf?" or
"when did Andrew and his girlfriend go fishing?" the person is the one the question names, whose own
turns say "I". Pure functions; no store call.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Sequence

Subject = Literal["self", "other", "both"]

_EN_RELATIONS = (
    "sister|brother|sibling|mother|mom|mum|mama|father|dad|papa|parent|wife|husband|partner|spouse|fiance|fiancee|"
    "girlfriend|boyfriend|friend|son|daughter|kid|child|children|baby|grandmother|grandma|granny|grandfather|grandpa|"
    "grandson|granddaughter|aunt|uncle|cousin|niece|nephew|boss|manager|colleague|coworker|co-worker|roommate|flatmate|"
    "neighbour|neighbor|family|in-laws|mother-in-law|father-in-law|teacher|doctor"
)
_EN_OTHER = re.compile(
    rf"\b(?:my|your|his|her|their|our|[a-z][\w-]*'s)\s+(?:(?:older|younger|little|big|baby|best|twin|ex|step|new|old)[- ]?)?"
    rf"(?:{_EN_RELATIONS})(?:s|es|'s)?\b",
    re.IGNORECASE,
)
_EN_PRONOUN = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their|he's|she's|they're)\b", re.IGNORECASE)
_EN_SELF = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll|im)\b", re.IGNORECASE)
_ZH_RELATIONS = (
    "男朋友|女朋友|朋友|妹妹|姐姐|哥哥|弟弟|姐妹|兄弟|妈妈|母亲|爸爸|父亲|父母|老婆|妻子|太太|丈夫|老公|儿子|女儿|孩子|"
    "爷爷|奶奶|外公|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|姑姑|表哥|表姐|表妹|表弟|堂哥|堂姐|同事|老板|上司|邻居|室友|家人|老师"
)
_ZH_OTHER = re.compile(rf"(?:[我你他她]们?的?)?(?:{_ZH_RELATIONS})")
_ZH_PRONOUN = re.compile(r"[他她]们?")
_ZH_SELF = re.compile(r"我(?!们)")


def subject_of(text: str, user_id: str = "", pronouns: bool = True) -> Subject | None:
    """Whom `text` is about: 'self' (the user), 'other', 'both' or None. `pronouns`: whether "she" or
    "他" make it 'other' (a memory: yes; a question: no, see the module's docstring)."""
    relations = [m.group(0) for m in (*_EN_OTHER.finditer(text), *_ZH_OTHER.finditer(text))]
    other = any(pronouns or _the_users(r, user_id) for r in relations)
    rest = _ZH_OTHER.sub(" ", _EN_OTHER.sub(" ", text))  # "my sister" / "我妹妹" are not the user
    if pronouns and (_EN_PRONOUN.search(rest) or _ZH_PRONOUN.search(rest)):
        other = True
    me = bool(_EN_SELF.search(rest) or _ZH_SELF.search(rest) or _names(rest, user_id))
    if me and other:
        return "both"
    return "self" if me else "other" if other else None


def _the_users(relation: str, user_id: str) -> bool:
    """Whether a relation phrase is the user's: "my sister", "alice's husband", "我妹妹", a bare "妹妹"
    (a question asking about "his girlfriend" asks about someone else's)."""
    head = relation.split()[0].lower() if relation.split() else ""
    if head in ("my", "our") or (user_id and head == f"{user_id.strip().lower()}'s"):
        return True
    return bool(re.match(r"[\u4e00-\u9fff]", relation)) and not relation.startswith(("你", "他", "她"))


def _names(text: str, user_id: str) -> bool:
    """The user's own id as a whole word (Latin) or a substring (Chinese); ids under 2 characters never match."""
    name = user_id.strip()
    if len(name) < 2:
        return False
    if re.search(r"[\u4e00-\u9fff]", name):
        return name in text
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def penalties(query: str, texts: Sequence[str], user_id: str, weight: float) -> list[float]:
    """What each memory's score loses: `weight` when the question is about the user and the memory
    only about someone else, or the reverse; else 0."""
    asked = subject_of(query, user_id, pronouns=False) if weight > 0 else None
    if asked not in ("self", "other"):
        return [0.0] * len(texts)
    opposite = "other" if asked == "self" else "self"
    return [-weight if subject_of(t, user_id) == opposite else 0.0 for t in texts]


def apply(items: Sequence[Any], query: str, user_id: str, weight: float) -> list[Any]:
    """Re-score candidates (`.score`, `.row`, `.parts`), best first; the identity when nothing is
    lowered. Ties keep the incoming order."""
    if weight <= 0 or len(items) < 2:
        return list(items)
    losses = penalties(query, [str(it.row.get("text") or "") for it in items], user_id, weight)
    if not any(losses):
        return list(items)
    for it, loss in zip(items, losses):
        it.parts = {**getattr(it, "parts", {}), "subject": loss}
        it.score += loss
    order = {id(it): i for i, it in enumerate(items)}
    return sorted(items, key=lambda it: (-it.score, order[id(it)]))
