"""The write gate: rules that decide a turn before the model is asked (issue 21).

A small local model is slow on a CPU (seconds a write decision) and stores chitchat, arithmetic
and how-to requests; the offline rules get those right. The gate decides the turns where the
rules are certain and leaves every other one to the model:

    gate(turns, now_iso) -> WriteDecision   certain: "skip", or "store" with the rules' thing/context
                         -> None            not certain: ask the model (or defer the decision)

Its rules are the table `RULES`, read top to bottom; the first row that applies decides, and
its name is the reason ("gate: greeting"). Only the user's turns are read. When the user answers
an assistant's question ("Do you have pets?" / "yes, two"), a short reply may be a personal fact,
so only the rows marked `when_answering` (remember and forget requests) apply there.

A forget request ("忘掉我刚才说的", "forget what I said about Paris", "这个别记") is decided as
"do not store" and no more: deleting what it names belongs to another issue (a delete-by-request
flow), not to the gate. A forget request that also states something personal ("forget Paris,
I'm moving to Rome") is not certain and goes to the model.

Before the rows, `refusals`: what the project's declared categories forbid (`sensitive` / `never_store`
with keywords) is refused on every write path that infers (add(infer=True), observe, a session's
extraction), with the reason in the result's `refused` list.

Pure: no store, no model; the declared categories are passed in. `write_decider.decide_turn` decides when
the rows run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .. import text as T
from ..llm.rules.writing import remember_request as _remember_decision  # answered as the write rule answers it
from ..text.turns import (
    Turn,
    arithmetic,
    content_request,
    forget_request,
    fragment,
    greeting,
    knowledge_question,
    laughter,
    read_turn,
    weather_remark,
)
from .results import WriteDecision

Outcome = Literal["skip", "store"]


@dataclass(frozen=True)
class GateRule:
    name: str  # the reason: "gate: <name>"
    outcome: Outcome
    applies: Callable[[Turn], bool]
    when_answering: bool = False  # also decides a reply to an assistant's question
    note: str = ""  # added to the reason


def remember_request(t: Turn) -> bool:
    decision = _remember_decision(t.text, t.now)
    return bool(decision and decision["write_episodic"])  # one that names nothing ("记住这个") goes to the model


RULES: tuple[GateRule, ...] = (
    GateRule("forget request", "skip", forget_request, when_answering=True,
             note="not stored; deleting what it names is not done here"),
    GateRule("remember request", "store", remember_request, when_answering=True),
    GateRule("laughter", "skip", laughter),
    GateRule("greeting", "skip", greeting),
    GateRule("fragment", "skip", fragment),
    GateRule("arithmetic", "skip", arithmetic),
    GateRule("knowledge question", "skip", knowledge_question),
    GateRule("content request", "skip", content_request),
    GateRule("weather remark", "skip", weather_remark),
)


# --- the project's instructions (MemoryConfig.categories; docs/categories.md) ----------------------------
def refusals(text: str, categories: Sequence[Any]) -> list[str]:
    """Why the project's declared categories forbid storing `text`, or [] when none does: a category marked
    `sensitive` or `never_store` whose keywords (or a whole example) the text holds. Certain as far as the
    operator's words are, so it runs before the other rows and before any model, whatever `llm_gate` says;
    a turn that holds one is refused whole (a clause split could leave the rest of a diagnosis behind)."""
    from ..lifecycle.categories import first_match

    found = first_match(text, categories, refused=True) if categories and text.strip() else None
    if found is None:
        return []
    spec, word = found
    return [f"instructions: {spec.name} is never stored (it says {word!r})"]


def refused_turn(turns: Sequence[dict[str, Any]], categories: Sequence[Any]) -> list[str]:
    """`refusals` of what the user said in these turns (every turn when none is the user's)."""
    turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
    said = T.user_lines(turns) or " ".join(t["content"] for t in turns)
    return refusals(said, categories)


def gate_rule(turns: Sequence[dict[str, Any]], now_iso: str = "") -> GateRule | None:
    """The row that decides these turns, or None when none is certain."""
    turn = read_turn(turns, now_iso)
    if not turn.parts:
        return None  # nothing the user said (an assistant's turn alone): the model judges it
    for row in RULES:
        if (row.when_answering or not turn.answering) and row.applies(turn):
            return row
    return None


def gate(turns: Sequence[dict[str, Any]], now_iso: str = "") -> WriteDecision | None:
    """A certain decision for these turns, or None: ask the model."""
    row = gate_rule(turns, now_iso)
    if row is None:
        return None
    reason = f"gate: {row.name}" + (f" ({row.note})" if row.note else "")
    if row.outcome == "skip":
        return WriteDecision(write_episodic=False, reason=reason)
    decided = _remember_decision(T.user_lines(list(turns)), now_iso) or {}
    return WriteDecision.model_validate({**decided, "reason": reason})
