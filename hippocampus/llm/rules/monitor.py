"""Offline rules for the KnowledgeMonitor: what the write rules would store is added; a shown
memory counts as used (and is boosted) when the assistant's reply repeats a name, place or number
of it, or two of its content words; a forget request deletes the shown memories it names.

Degraded, and honest about it: without a model there is no UPDATE (a correction is added as a new
memory; observe then supersedes what it takes back or re-states, memory/forget.py, as add(infer=True)
does), and "used" is word overlap, not understanding. A forget request also removes what it names
among memories not shown (memory/forget.py).
"""

from __future__ import annotations

import re
from typing import Any

from ...text import forget_clauses, key_terms, user_lines
from . import rule
from .writing import decide

_FORGET_WORDS = {"forget", "said", "told", "mentioned", "about", "what", "please", "忘掉", "忘记", "说的", "刚才"}
_DISTINCT = re.compile(r"\b[A-Z][a-z]{2,}\b|\d+")


def _stem(terms: set[str]) -> set[str]:
    return {t[:-1] if t.isascii() and len(t) > 3 and t.endswith("s") else t for t in terms} - {"user", "user'"}


def used(memory: str, reply: str) -> bool:
    """The reply repeats a name, place or number of the memory, or two of its content words."""
    if not reply.strip():
        return False
    shared = _stem(key_terms(memory)) & _stem(key_terms(reply))
    distinct = {d.lower() for d in _DISTINCT.findall(memory)} - {"the", "user", "my"}
    return len(shared) >= 2 or bool(distinct & {d.lower() for d in _DISTINCT.findall(reply)})


def forget_targets(user: str) -> tuple[list[str], list[str]]:
    """(the forget clauses, the other clauses) of the user's words: the one forget rule (text.FORGET)."""
    return forget_clauses(user)


def named_by(memory: str, asks: list[str]) -> bool:
    """A forget request names this memory: it shares a content word with it."""
    wanted = _stem(set().union(*(key_terms(a) for a in asks))) - _FORGET_WORDS
    return bool(wanted & _stem(key_terms(memory)))


@rule("knowledge_monitor")
def _knowledge_monitor(inputs: dict[str, Any]) -> dict[str, Any]:
    turns = [t for t in inputs.get("turns") or [] if isinstance(t, dict)]
    now = str(inputs.get("now") or "")
    reply = " ".join(str(t.get("content", "")) for t in turns if t.get("role") == "assistant")
    asks, rest = forget_targets(user_lines(turns))
    verdicts = []
    for item in inputs.get("memories") or []:
        text = str(item.get("text") or "") if isinstance(item, dict) else ""
        key = str(item.get("id") or "") if isinstance(item, dict) else ""
        if asks and named_by(text, asks):
            verdicts.append({"id": key, "action": "delete", "used": False, "reason": "rules: the user asked to forget it"})
        elif used(text, reply):
            verdicts.append({"id": key, "action": "boost", "used": True, "reason": "rules: the reply repeats it"})
        else:
            verdicts.append({"id": key, "action": "skip", "used": False, "reason": "rules: not in the reply"})
    kept = [{"role": "user", "content": " ".join(rest)}] if asks else [t for t in turns if t.get("role", "user") == "user"]
    decision = decide(kept, now) if any(str(t.get("content", "")).strip() for t in kept) else {"write_episodic": False}
    add = []
    if decision.get("write_episodic") and decision.get("thing"):
        importance = "high" if "remember" in str(decision.get("reason", "")) else "medium"
        add.append({"text": decision["thing"], "category": "", "importance": importance})
    return {"add": add, "memories": verdicts, "reason": str(decision.get("reason") or "rules")}
