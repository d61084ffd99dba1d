"""ToolContextCondenser: a tool's raw result (a web page, a screenshot's text, a search) is too big to
carry and too fleeting to store; one model call condenses it into the one to three sentences the
next turn needs. The agent's Session carries that to the next turn only, then drops it; nothing of it
reaches long-term memory unless the user's own words say it again.

Pure: the conversation's last messages, the tool's name and its result in, a validated ToolContext out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import Processor
from .recall_planner import turns_view
from .results import ToolContext

MAX_RESULT_CHARS = 12000  # a longer result reaches the model as its head and tail
MAX_CONTEXT_CHARS = 1000  # what the next turn carries at most


def bounded_result(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """The result itself, or its first three quarters and last quarter of `limit` characters."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    return f"{text[:head]}\n…\n{text[-(limit - head):]}"


class ToolContextCondenser(Processor[ToolContext]):
    prompt_name = "tool_context"
    result_model = ToolContext

    def condense(self, turns: Sequence[dict[str, Any]], tool: str, result: str) -> ToolContext:
        """One model call; raises LLMError when the model fails (the session carries nothing)."""
        answer: ToolContext = self.ask(turns=turns_view(turns)[-6:], tool=tool, result=bounded_result(result))
        text = " ".join(answer.context.split())[:MAX_CONTEXT_CHARS] if answer.useful else ""
        return answer.model_copy(update={"context": text, "useful": bool(text)})
