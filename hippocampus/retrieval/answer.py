"""The answer stage: statements that answer come before questions, requests and remarks, and a
statement of the slot a question asks rises (issue 55).

    score += ASK_WEIGHT   * -1  for a memory that is a question, a request or a remark (speech.py),
                                when the query asks or requests something
           + SLOT_WEIGHT  * +1  for a memory that states a slot the question asks, of the person it asks about:
                                the record's own statements (text/slots.py, `metadata["statements"]`) where
                                one is of that slot, else the statement cues (slot_cues.py)

Both are bounded shifts of the fused score (the cosine's scale), not filters: a question stored as a
memory loses 0.1 and nothing more, so it goes below the statements of comparable relevance and stays
findable where nothing else matches. A query that asks nothing ("鸭血粉丝汤", a keyword) leaves every act where it is:
the question it names is what it looks for.

Whose slot: "What's my dog's name?" asks the user's, "What's Jess's dog called?" / "王琳的狗叫什么？" a named
person's and "我老公做什么工作" a relation's (subject.owner_of). Only a statement of that subject gains: the
user's own (a kept statement whose subject is the user or the user's pet, or by the cues a memory the subject
stage reads as the user's: "I have a beagle named Waffles", not "Jess's dog is a husky called Luna" nor
"刘洋养了一只泰迪"), or one that names the relation or the person. Was (issue 55's held-out misses): Luna
first for the user's dog in both languages, and "We have a golden retriever called Max" for 王琳's corgi.

Why these sizes: chosen on the tune half of tests/data/ranking_questions.json only (`python scripts/eval.py
ranking --raw --split tune --weights ...`; docs/decisions.md, "The answer stage"): 0.1 and 0.1 sit in the
middle of the plateau where every pair scores alike, the size of BM25's whole vote in the weighted fusion
(fusion.py). Pure functions; no store call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..text.slot_tables import PETS as READER_PETS
from .slot_cues import PETS, asked, stated
from .speech import act_of, answers_nothing
from .subject import mentions, owner_of, subject_of

ASK_WEIGHT = 0.1  # what a question, a request or a remark loses
SLOT_WEIGHT = 0.1  # what a statement of an asked slot gains


def _kept(metadata: Any) -> list[tuple[str, str]]:
    """(subject, attribute) of each statement the record keeps (text/slots.py, `metadata["statements"]`)."""
    kept = metadata.get("statements") if isinstance(metadata, Mapping) else None
    if not isinstance(kept, list):
        return []
    return [(str(s.get("subject") or "user"), str(s.get("attribute") or "")) for s in kept if isinstance(s, Mapping)]


def _speaks(subject: str, attribute: str, slots: frozenset[str]) -> bool:
    """Whether a kept statement is of an asked slot, whoever it is about."""
    return bool({subject, "pet"} & slots) if subject in READER_PETS else attribute in slots


def _fills(subject: str, attribute: str, slots: frozenset[str], owner: str | None) -> bool:
    """Whether one kept statement fills a slot the question asks of `owner`: the same attribute and subject
    (the user's pet, "my dog Biscuit", is a statement whose subject is "dog": it fills the user's pet slots)."""
    if subject in READER_PETS:
        return bool({subject, "pet"} & slots) and owner in (None, "user")
    return attribute in slots and (owner is None or subject == owner)


def states(text: str, metadata: Any, slots: frozenset[str], owner: str | None, user_id: str = "") -> bool:
    """Whether a memory states a slot the question asks, of the person it asks about (`owner`, subject.owner_of).

    A record whose slot reader's statements (`metadata["statements"]`) hold an asked slot is read by them alone
    (one vocabulary for the write path's corrections and this bonus: "My husband is a nurse" is the husband's
    job); a record without one (older, or a text the narrow reader finds nothing of that slot in) by the statement cues (slot_cues.stated), its owner read from its words: the user's slot from a memory that
    is not only about someone else (subject.subject_of), a relation's or a named person's from one that names them."""
    kept = [(subject, attribute) for subject, attribute in _kept(metadata) if _speaks(subject, attribute, slots)]
    if kept:
        filled = any(_fills(subject, attribute, slots, owner) for subject, attribute in kept)
        return filled and (owner != "user" or _users_own(text, user_id, kept))
    if not slots & stated(text):
        return False
    if owner is None:
        return True
    if owner == "user":
        return subject_of(text, user_id) in ("self", "both")
    return mentions(text, owner)


def _users_own(text: str, user_id: str, kept: list[tuple[str, str]]) -> bool:
    """The reader's "user" agrees with the text's own subject: not a memory only about someone else ("我邻居家的狗
    叫小黑" reads as the user's name to the reader, as "my neighbour's" to the subject stage), nor a pet's name
    ("家里有只金毛叫旺财") read as the user's."""
    if subject_of(text, user_id) == "other":
        return False
    return not (all(a == "name" for s, a in kept if s == "user") and any(s == "user" for s, _ in kept) and stated(text) & PETS)


def shifts(query: str, rows: Sequence[Mapping[str, Any] | str], ask_weight: float, slot_weight: float,
           user_id: str = "") -> list[tuple[float, float]]:
    """(ask, slot) shift of each row's score for `query` (a row: a store row with `text` and `metadata`, or a text)."""
    slots = asked(query) if slot_weight > 0 else frozenset()
    owner = owner_of(query, user_id) if slots else None
    if owner in slots:  # "Who's my boss?" asks the user's boss slot, not the boss's
        owner = "user"
    seeks = ask_weight > 0 and (bool(slots) or act_of(query) in ("question", "request"))
    out = []
    for row in rows:
        text, meta = (row, None) if isinstance(row, str) else (str(row.get("text") or ""), row.get("metadata"))
        ask = -ask_weight if seeks and answers_nothing(text) else 0.0
        slot = slot_weight if slots and not ask and states(text, meta, slots, owner, user_id) else 0.0
        out.append((ask, slot))
    return out


def apply(items: Sequence[Any], query: str, ask_weight: float, slot_weight: float, user_id: str = "") -> list[Any]:
    """Re-score candidates (`.score`, `.row`, `.parts`), best first; the identity when nothing moves.
    Ties keep the incoming order."""
    if len(items) < 2 or (ask_weight <= 0 and slot_weight <= 0):
        return list(items)
    moves = shifts(query, [it.row for it in items], ask_weight, slot_weight, user_id)
    if not any(a or s for a, s in moves):
        return list(items)
    for it, (ask, slot) in zip(items, moves):
        it.parts = {**getattr(it, "parts", {}), **({"asks": ask} if ask else {}), **({"slot": slot} if slot else {})}
        it.score += ask + slot
    order = {id(it): i for i, it in enumerate(items)}
    return sorted(items, key=lambda it: (-it.score, order[id(it)]))
