"""Chat-turns section of scripts/eval_processors.py (tests/data/chat_turns.jsonl): the write decision on
realistic turns of sixteen conversations, one person each over weeks, in English and Chinese (issue 40).

Each case is a turn (a user message, sometimes after an assistant's question), `keep` (does it say
anything about the user's life: body, health, diet, family, pets, home, work, belongings, plans,
bookings, routines, preferences, advice given, events, corrections), a `kind` and a `split` by whole
conversation. Reported: accuracy, precision and recall of keeping, the precision and recall of dropping
(`drop_precision`, `drop_recall`), and accuracy per kind. When unsure, the rules keep: a dropped fact is
lost for good.
"""

from __future__ import annotations

from typing import Any

from hippocampus.errors import LLMError
from hippocampus.processors import EpisodicWriteDecider
from scripts.eval_common import Confusion, prompts_dir, ratio

NOW = "2026-03-01T10:00:00+00:00"
METRICS = ["accuracy", "precision", "recall", "drop_precision", "drop_recall", "accuracy_en", "accuracy_zh", "errors", "cases"]


def decisions(llm: Any, cases: list[dict[str, Any]]) -> list[bool | None]:
    """The decider's write_episodic per case, None where the model failed."""
    decider = EpisodicWriteDecider(llm, prompts_dir())
    out: list[bool | None] = []
    for case in cases:
        try:
            out.append(decider.decide("eval", case["turns"], now_iso=NOW).write_episodic)
        except LLMError:
            out.append(None)
    return out


def metrics(cases: list[dict[str, Any]], got: list[bool | None]) -> dict[str, Any]:
    tally = Confusion()
    for case, decided in zip(cases, got):
        tally.add(decided, bool(case["keep"]), f"accuracy_{case.get('lang', '?')}", f"accuracy_kind_{case.get('kind', '?')}")
    out: dict[str, Any] = tally.metrics(len(cases))
    out.update({"drop_precision": ratio(tally.tn, tally.tn + tally.fn), "drop_recall": ratio(tally.tn, tally.tn + tally.fp),
                "errors": sum(g is None for g in got), "cases": len(cases),
                "wrong": [c["id"] for c, g in zip(cases, got) if g is not bool(c["keep"])]})
    return out


def evaluate(llm: Any, cases: list[dict[str, Any]]) -> dict[str, Any]:
    return metrics(cases, decisions(llm, cases))


def register(add: Any) -> None:
    add("chat_turns", "chat_turns.jsonl", evaluate, METRICS)
