"""RecallPlanner: before the agent answers, one model call reads the conversation and what was
recalled so far (under short ids r1, r2, ...) and says whether that is enough to answer, and if
not, what to recall next, as one short search query. The agent's recall loop (agent/recall.py)
runs the search and asks again, a few rounds at most.

Pure: turns and recalled records in, a validated `RecallPlan` out; it never searches itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import MemoryRecord
from .base import Processor
from .results import RecallPlan

MAX_TURNS = 20  # the conversation's most recent messages the planner reads
MAX_TURN_CHARS = 2000  # each message cut to its last characters
MAX_NEED_CHARS = 200  # a need is a search query, not an essay


def turns_view(turns: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The most recent messages as the planner reads them: role and content, long ones cut."""
    out = []
    for t in list(turns)[-MAX_TURNS:]:
        content = str(t.get("content", ""))
        out.append({"role": str(t.get("role", "user")), "content": content[-MAX_TURN_CHARS:]})
    return out


class RecallPlanner(Processor[RecallPlan]):
    prompt_name = "recall_planner"
    result_model = RecallPlan

    def plan(self, turns: Sequence[dict[str, Any]], recalled: Sequence[MemoryRecord], asked: Sequence[str] = (),
             now_iso: str = "") -> RecallPlan:
        """One model call; raises LLMError when the model fails (the loop keeps what it has). The
        need comes back on one line, at most MAX_NEED_CHARS long ("" when the model can answer)."""
        memories = [{"id": f"r{i}", "text": rec.text, "time": rec.time_iso} for i, rec in enumerate(recalled, 1)]
        result: RecallPlan = self.ask(now=now_iso, turns=turns_view(turns), recalled=memories, asked=list(asked))
        need = "" if result.can_answer else " ".join(result.need.split())[:MAX_NEED_CHARS]
        return result.model_copy(update={"need": need})
