"""Offline rules for the agent helpers' SessionExtractor: each user message of the session goes
through the write rules (writing.decide) on its own; what they would store becomes a new memory
("high" importance for a remember request). Greetings, thanks, small talk and knowledge questions
are left out, as the write rules leave them out.

Degraded, and honest about it: no understanding, no summary of a task, and never an update (a
correction is stored as a new memory; the nightly contradiction step supersedes the old one).
The recall loop needs no rule: offline it makes one recall with the user's own words and asks no model.
A tool's result is cut, not condensed: its sentences that share a word with the user's last message.
"""

from __future__ import annotations

import re
from typing import Any

from ...text import key_terms
from . import rule
from .writing import decide


@rule("session_extractor")
def _session_extractor(inputs: dict[str, Any]) -> dict[str, Any]:
    now = str(inputs.get("now") or "")
    new = []
    for turn in inputs.get("turns") or []:
        if not isinstance(turn, dict) or str(turn.get("role", "user")) != "user" or not str(turn.get("content", "")).strip():
            continue
        decision = decide([{"role": "user", "content": str(turn["content"])}], now)
        if decision.get("write_episodic") and str(decision.get("thing") or "").strip():
            importance = "high" if "remember" in str(decision.get("reason", "")) else "medium"
            new.append({"text": decision["thing"], "category": "", "importance": importance})
    return {"new": new, "updates": [], "reason": "rules: what the write rules keep of each user message"}


_SENTENCE = re.compile(r"(?<=[.!?。！？\n])\s*")


@rule("tool_context")
def _tool_context(inputs: dict[str, Any]) -> dict[str, Any]:
    """Offline, no summary: the result's first sentences that share a content word with the user's
    last message (else its first two), cut to 400 characters."""
    turns = [t for t in inputs.get("turns") or [] if isinstance(t, dict)]
    asked = next((str(t.get("content", "")) for t in reversed(turns) if t.get("role", "user") == "user"), "")
    sentences = [s.strip() for s in _SENTENCE.split(str(inputs.get("result") or "")) if s.strip()]
    wanted = key_terms(asked)
    chosen = [s for s in sentences if key_terms(s) & wanted][:3] or sentences[:2]
    context = " ".join(chosen)[:400]
    return {"useful": bool(context), "context": context}
