"""The answer stage: statements that answer come before questions, requests and remarks, and a
statement of the slot a question asks rises (issue 55).

    score += ASK_WEIGHT   * -1  for a memory that is a question, a request or a remark (speech.py),
                                when the query asks or requests something
           + SLOT_WEIGHT  * +1  for a memory whose cues state a slot the question asks (slot_cues.py)

Both are bounded shifts of the fused score (the cosine's scale), not filters: a question stored as a
memory loses 0.1 and nothing more, so it goes below the statements of comparable relevance and stays
findable where nothing else matches. A query that asks nothing ("鸭血粉丝汤", a keyword) leaves every act where it is:
the question it names is what it looks for.

Why these sizes: chosen on the tune half of tests/data/ranking_questions.json only (scripts/eval_ranking.py
--raw --split tune --weights ...; docs/performance.md), hit@1 of 47: both 0 -> 26, ask 0.1 alone -> 41,
slot 0.1 alone -> 42, every pair from 0.05 to 0.15 -> 47; 0.1 and 0.1 sit in the middle of that plateau,
the size of BM25's whole vote in the weighted fusion (fusion.py). Pure functions; no store call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .slot_cues import asked, stated
from .speech import act_of, answers_nothing

ASK_WEIGHT = 0.1  # what a question, a request or a remark loses
SLOT_WEIGHT = 0.1  # what a statement of an asked slot gains


def shifts(query: str, texts: Sequence[str], ask_weight: float, slot_weight: float) -> list[tuple[float, float]]:
    """(ask, slot) shift of each text's score for `query`."""
    slots = asked(query) if slot_weight > 0 else frozenset()
    seeks = ask_weight > 0 and (bool(slots) or act_of(query) in ("question", "request"))
    out = []
    for text in texts:
        ask = -ask_weight if seeks and answers_nothing(text) else 0.0
        slot = slot_weight if slots and not ask and slots & stated(text) else 0.0
        out.append((ask, slot))
    return out


def apply(items: Sequence[Any], query: str, ask_weight: float, slot_weight: float) -> list[Any]:
    """Re-score candidates (`.score`, `.row`, `.parts`), best first; the identity when nothing moves.
    Ties keep the incoming order."""
    if len(items) < 2 or (ask_weight <= 0 and slot_weight <= 0):
        return list(items)
    moves = shifts(query, [str(it.row.get("text") or "") for it in items], ask_weight, slot_weight)
    if not any(a or s for a, s in moves):
        return list(items)
    for it, (ask, slot) in zip(items, moves):
        it.parts = {**getattr(it, "parts", {}), **({"asks": ask} if ask else {}), **({"slot": slot} if slot else {})}
        it.score += ask + slot
    order = {id(it): i for i, it in enumerate(items)}
    return sorted(items, key=lambda it: (-it.score, order[id(it)]))
