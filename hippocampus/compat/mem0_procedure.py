"""mem0's procedural memory (`memory_type="procedural_memory"`): one summary of a whole procedure. The
configured model writes it; offline (the rules provider) it is the messages' steps in order, numbered, as said:
a degraded summary, never a made-up one."""

from __future__ import annotations

import re
from typing import Any

from ..errors import InvalidInput

PROCEDURE_PROMPT = """You record an AI agent's procedure so that the agent can continue or repeat it without ambiguity.
Summarise the conversation below as: the task objective; its progress; then every step the agent took, numbered in
order, each with what was done (parameters and targets included) and its result quoted exactly as it was given.
Keep every URL, number, name, error message and output verbatim. Answer with the summary only."""


def procedure_summary(said: list[dict[str, Any]], llm: Any | None) -> str:
    """The summary of `said` (role/content messages): by `llm` (a ChatModel), or offline when it is None."""
    steps = [m for m in said if m["role"] != "system" and str(m["content"]).strip()]
    if not steps:
        raise InvalidInput("procedural memory needs at least one user or assistant message")
    if llm is None:
        return "\n".join(f"{i}. {m['role']}: {str(m['content']).strip()}" for i, m in enumerate(steps, 1))
    transcript = "\n".join(f"{m['role']}: {m['content']}" for m in said)
    summary = unfenced(llm.chat(PROCEDURE_PROMPT, f"{transcript}\n\nCreate procedural memory of the above conversation."))
    if not summary:
        raise InvalidInput("The LLM returned no content for the procedural memory summary; nothing was stored")
    return summary


def unfenced(text: str) -> str:
    """A model's answer without a surrounding code fence, as mem0's remove_code_blocks."""
    text = (text or "").strip()
    fenced = re.match(r"^```[a-zA-Z0-9]*\n([\s\S]*?)\n?```$", text)
    return (fenced.group(1) if fenced else text).strip()
