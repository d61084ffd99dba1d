"""The subject stage: a question about the user passes over memories about someone else, and the reverse.

Why: with the bundled e5-small, "where does alice live?" (alice being the user) scored "My sister Ana
lives in Lisbon" 0.785 and "I moved to Berlin in May" 0.749: the embedding matches "live" with
"lives" and has no notion of whose life it is. A person reads the subject first. So each text gets
one of four subjects, from plain markers in English and Chinese:

- *self*: the user; first person ("I", "me", "my", "我"), the user's household ("we", "our", "我们", "家里"),
  "the user" / "用户", or the user's own id as a word ("alice");
- *other*: people around the user; a relation named through a possessive ("my sister", "alice's
  husband", "我妹妹") and, in a memory only, anyone's relations ("his wife", "她的朋友"), a named
  person's pet or thing ("Jess's dog") and third-person pronouns ("she", "他");
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
from collections.abc import Sequence
from typing import Any, Literal

Subject = Literal["self", "other", "both"]

_EN_RELATIONS = (
    "sister|brother|sibling|mother|mom|mum|mama|father|dad|papa|parent|wife|husband|partner|spouse|fiance|fiancee|"
    "girlfriend|boyfriend|friend|son|daughter|kid|child|children|baby|grandmother|grandma|granny|grandfather|grandpa|"
    "grandson|granddaughter|aunt|uncle|cousin|niece|nephew|boss|manager|colleague|coworker|co-worker|roommate|flatmate|"
    "neighbour|neighbor|in-laws|mother-in-law|father-in-law|teacher|doctor"
)
_EN_OTHER = re.compile(
    rf"\b(?:my|your|his|her|their|our|[a-z][\w-]*'s)\s+(?:(?:older|younger|little|big|baby|best|twin|ex|step|new|old)[- ]?)?"
    rf"(?:{_EN_RELATIONS})(?:s|es|'s)?\b",
    re.IGNORECASE,
)
# A named person's pet or thing in a memory ("Jess's dog is a husky called Luna"): theirs, not the user's (issue 55:
# it outranked "I have a beagle named Waffles" for "What's my dog's name?"). Only nouns that never follow a
# contracted "is" ("Max's four", "Kevin's going"); the user's own id is the user (`_the_users`).
_EN_NAMED = re.compile(
    r"\b[A-Z][a-z]+'s\s+(?:(?:new|old|little|big|first|second)\s+)?(?:dogs?|cats?|pupp(?:y|ies)|kittens?|pets?|husky|beagle|"
    r"birthday|car|house|flat|apartment|job|rent|salary|phone|email|address|school|company)\b"
)
_EN_PRONOUN = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their|he's|she's|they're)\b", re.IGNORECASE)
# "we", "our", "my family", "our dog": the user's own household speaks with the user (issue 40: "We have a golden
# retriever called Max" was ranked 9th of 10 for "What is my dog's name?"); "the user" is how a prompt names them.
_EN_SELF = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll|im|the user)\b", re.IGNORECASE)
_EN_HOUSEHOLD = re.compile(r"\b(?:we|us|our|ours|ourselves|we're|we've|we'd|we'll)\b", re.IGNORECASE)
_ZH_RELATIONS = (
    "男朋友|女朋友|朋友|妹妹|姐姐|哥哥|弟弟|姐妹|兄弟|妈妈|母亲|爸爸|父亲|父母|老婆|妻子|太太|丈夫|老公|儿子|女儿|孩子|"
    "爷爷|奶奶|外公|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|姑姑|表哥|表姐|表妹|表弟|堂哥|堂姐|同事|老板|上司|邻居|室友|老师"
)
_ZH_OTHER = re.compile(rf"(?:[我你他她]们?的?)?(?:{_ZH_RELATIONS})|[我你他她](?:爸妈|爸|妈|姐|哥|弟|妹)")
_ZH_PRONOUN = re.compile(r"[他她]们?")
_ZH_SELF = re.compile(r"我(?!们)|用户")
_ZH_HOUSEHOLD = re.compile(r"我们|咱|家里|家人")


def subject_of(text: str, user_id: str = "", pronouns: bool = True) -> Subject | None:
    """Whom `text` is about: 'self' (the user), 'other', 'both' or None. `pronouns`: whether "she" or
    "他" make it 'other' (a memory: yes; a question: no, see the module's docstring)."""
    named = [m.group(0) for m in _EN_NAMED.finditer(text) if pronouns and not _the_users(m.group(0), user_id)]
    relations = [m.group(0) for m in (*_EN_OTHER.finditer(text), *_ZH_OTHER.finditer(text))] + named
    other = any(pronouns or _the_users(r, user_id) for r in relations)
    rest = _ZH_OTHER.sub(" ", _EN_OTHER.sub(" ", text))  # "my sister" / "我妹妹" are not the user
    for phrase in named:
        rest = rest.replace(phrase, " ")
    if pronouns and (_EN_PRONOUN.search(rest) or _ZH_PRONOUN.search(rest)):
        other = True
    me = bool(_EN_SELF.search(rest) or _ZH_SELF.search(rest) or _names(rest, user_id))
    # "we"/"our" make a text the user's own unless it is about someone named by a relation ("My neighbour's
    # cat keeps jumping onto our balcony" is the neighbour's cat) and does not open with them ("我们家还有一只乌龟，是儿子在养")
    household = _EN_HOUSEHOLD.search(rest) or _ZH_HOUSEHOLD.search(rest)
    me = me or bool(household and (not relations or household.start() == len(rest) - len(rest.lstrip())))
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


_WHO = re.compile(r"who\b|whom\b|谁|哪位", re.IGNORECASE)  # a question for a person is about someone, whoever "we" are


def penalties(query: str, texts: Sequence[str], user_id: str, weight: float) -> list[float]:
    """What each memory's score loses: `weight` when the question is about the user and the memory
    only about someone else, or the reverse; else 0."""
    asked = subject_of(query, user_id, pronouns=False) if weight > 0 and not _WHO.match(query.strip()) else None
    if asked not in ("self", "other"):
        return [0.0] * len(texts)
    opposite = "other" if asked == "self" else "self"
    return [-weight if subject_of(t, user_id) == opposite else 0.0 for t in texts]


# Where the user lives is where they live, not where they travel: "我下个月要去东京出差" outranked "I moved to
# Berlin in May" for "where does alice live?" (issue 40). A home question prefers statements of a residence.
_HOME_QUESTION = re.compile(r"\bwhere\b.{0,30}\b(?:live|living|lives|home|based|reside)\b|\b(?:hometown|home town|home address)\b"
                            r"|住在?哪|住哪|家在哪|住的地方|住址", re.IGNORECASE)
_RESIDENCE = re.compile(r"\b(?:live[sd]?|living|moved|relocated|settled|based|grew up)\b(?: now)? (?:in|to|at|near)\b|\bmy (?:home|flat|apartment|house) is\b"
                        r"|住在|搬到|搬去|搬回|家在|定居|老家在", re.IGNORECASE)


_PAST = re.compile(r"\b(?:used to|before|previously|formerly|grew up)\b|以前|之前|原来|曾经|小时候", re.IGNORECASE)  # a home left


def home_penalties(query: str, texts: Sequence[str], weight: float, asked: Subject | None = "self") -> list[float]:
    """What each memory loses for a question about where the user lives (`asked` is the question's subject): `weight` for any memory that states
    no present residence ("I live in", "moved to", "住在", "搬到"; not "we lived in Munich before") when some
    candidate does; trips, visits, a former home and "I work from home" pass below the home. Else 0."""
    if weight <= 0 or not _HOME_QUESTION.search(query) or asked != "self":
        return [0.0] * len(texts)
    homes = [bool(_RESIDENCE.search(t)) and not _PAST.search(t) for t in texts]
    return [0.0 if home or not any(homes) else -weight for home in homes]


def apply(items: Sequence[Any], query: str, user_id: str, weight: float) -> list[Any]:
    """Re-score candidates (`.score`, `.row`, `.parts`), best first; the identity when nothing is
    lowered. Ties keep the incoming order."""
    if weight <= 0 or len(items) < 2:
        return list(items)
    texts = [str(it.row.get("text") or "") for it in items]
    losses = penalties(query, texts, user_id, weight)
    away = home_penalties(query, texts, weight, subject_of(query, user_id, pronouns=False))
    if not any(losses) and not any(away):
        return list(items)
    for it, loss, trip in zip(items, losses, away):
        it.parts = {**getattr(it, "parts", {}), "subject": loss, **({"home": trip} if trip else {})}
        it.score += loss + trip
    order = {id(it): i for i, it in enumerate(items)}
    return sorted(items, key=lambda it: (-it.score, order[id(it)]))


# --- whose slot a question asks (the answer stage's slot bonus, answer.py) -----------------------------------
# "What's Jess's dog called?", "王琳的狗叫什么？": a named person's; "我老公做什么工作": a relation's (issue 55).
_EN_POSSESSOR = re.compile(r"\b([A-Z][a-z]+)'s\b")
_ZH_POSSESSOR = re.compile(r"(?:^|[，,。？?！!\s])([\u4e00-\u9fff]{2,3}?)家?的")
_NOT_A_NAME = frozenset({"what", "who", "where", "when", "how", "why", "which", "that", "this", "it", "there", "here", "he",
                         "she", "let", "today", "everyone", "everybody", "nobody", "one", "tomorrow", "yesterday"})
_ZH_NOT_A_NAME = re.compile(r"^[我你他她咱它谁]|今天|昨天|明天|上周|下周|这个|那个|什么|哪个|现在|以前|家里|自己|大家")
# Chinese short forms of a relation ("我姐", "我妈") -> the slot reader's relation (text/slot_tables.RELATIONS)
_ZH_SHORT = {"姐": "sister", "妹": "sister", "哥": "brother", "弟": "brother", "妈": "mother", "爸": "father"}


def _relation_key(word: str) -> str:
    """The slot reader's name of a relation word ("my husband" / "老公" -> "husband"); the word itself when the
    reader's table does not know it ("neighbour")."""
    from ..text.slot_tables import RELATIONS

    w = re.sub(r"^(?:my|our|[a-z][\w-]*'s)\s+|^[我你他她]们?的?|'s$", "", word.strip().lower())
    w = re.sub(r"^(?:(?:older|younger|little|big|baby|best|twin|ex|step|new|old)[- ]?)", "", w).strip()
    for key, words in RELATIONS.items():
        if w in (x.lower() for x in words) or (w.endswith("s") and w[:-1] in (x.lower() for x in words)):
            return key
    return _ZH_SHORT.get(w[:1], w) if len(w) == 1 or w in ("爸妈",) else w


def owner_of(question: str, user_id: str = "") -> str | None:
    """Whose slot a question asks: "user" (the user's own: "my", "我", "our"), a relation as the slot reader names
    it ("husband" for "我老公", "sister" for "我姐家的猫"), a named person in lower case ("jess", "王琳"), or None."""
    for m in _EN_POSSESSOR.finditer(question):
        name = m.group(1)
        if name.lower() not in _NOT_A_NAME and not _names(name, user_id):
            return name.lower()
    for m in _ZH_POSSESSOR.finditer(question):
        name = m.group(1)
        if not _ZH_NOT_A_NAME.search(name) and not _ZH_OTHER.search(name) and not _names(name, user_id):
            return name
    relations = [m.group(0) for m in (*_EN_OTHER.finditer(question), *_ZH_OTHER.finditer(question)) if _the_users(m.group(0), user_id)]
    if relations:
        return _relation_key(relations[0])
    return "user" if subject_of(question, user_id, pronouns=False) in ("self", "both") else None


def mentions(text: str, owner: str) -> bool:
    """Whether a memory names `owner` (a relation key or a person, owner_of's answer): "Jess's dog ..." names
    "jess"; "我姐家养了一只英短" and "My sister Jing ..." name "sister"."""
    from ..text.slot_tables import RELATIONS

    words = [owner, *RELATIONS.get(owner, ()), *(k for k, v in _ZH_SHORT.items() if v == owner)]
    for w in words:
        if re.match(r"[\u4e00-\u9fff]", w):
            if w in text:
                return True
        elif re.search(rf"(?<!\w){re.escape(w)}(?:s|'s)?(?!\w)", text, re.IGNORECASE):
            return True
    return False
