"""SessionExtractor: at the end of a session (when its buffer fills, or on an explicit save), one
model call reads the session's messages and at most 50 of the user's active memories (under short
ids m1, m2, ...) and says which new memories the session holds and which shown memories it
corrected; nothing else (no deletes, no boosts: the per-turn KnowledgeMonitor does those).

Pure: messages and records in, a checked `SessionPlan` out; agent/session.py applies it through the
facade. The checks are the processor's, not the model's: an id outside the shown set is refused, a
core or system memory is never updated, a "new" that repeats a shown memory (or another new one) is
dropped, and only the most recent MAX_CHARS of a long session reach the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import MemoryRecord
from .base import Processor
from .gate import refusals
from .monitor import MAX_SHOWN, repeats, shown_memories, shown_view
from .project import declared
from .results import MonitorAdd, SessionExtraction

MAX_CHARS = 8000  # the session's most recent characters that reach the model
_PERMANENT = ("core", "system")
_CATEGORIES = ("preference", "fact", "experience", "workflow", "decision", "skill_usage", "todo")

__all__ = ["MAX_CHARS", "MAX_SHOWN", "SessionExtractor", "SessionPlan", "plan", "recent", "shown_view"]


@dataclass
class SessionPlan:
    """What one extraction decided, checked: memory ids are the store's, not the short ids."""

    new: list[MonitorAdd] = field(default_factory=list)
    updates: dict[int, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    reason: str = ""
    left_out: int = 0  # the session's older messages that did not fit in MAX_CHARS


def recent(messages: Sequence[dict[str, Any]], max_chars: int = MAX_CHARS) -> tuple[list[dict[str, str]], int]:
    """The most recent messages that fit in `max_chars` (the newest one always, cut to its end if it
    alone is longer), and how many older ones were left out."""
    kept: list[dict[str, str]] = []
    used = 0
    for m in reversed(list(messages)):
        content = str(m.get("content", ""))
        if kept and used + len(content) > max_chars:
            break
        kept.append({"role": str(m.get("role", "user")), "content": content[-max_chars:]})
        used += len(content)
    return list(reversed(kept)), len(messages) - len(kept)


def plan(result: SessionExtraction, short: dict[str, MemoryRecord], declared: Sequence[Any] = ()) -> SessionPlan:
    """Check the model's answer against what it was shown and the project's declared categories
    (MemoryConfig.categories: a new memory or an update they forbid is refused, a category outside the
    built-in and declared ones is dropped for the guess). Pure."""
    out = SessionPlan(reason=result.reason)
    names = {*_CATEGORIES, *(spec.name for spec in declared)}
    for update in result.updates:
        rec = short.get(update.id)
        text = " ".join(update.text.split())
        if rec is None:
            out.refused.append(f"{update.id or '(no id)'}: not among the memories shown; ignored")
        elif rec.life.category.value in _PERMANENT:
            out.refused.append(f"{update.id}: a {rec.life.category.value} memory is never updated by a session")
        elif not text:
            out.refused.append(f"{update.id}: update without a text; ignored")
        elif refusals(text, declared):
            out.refused += [f"{update.id}: update {why}" for why in refusals(text, declared)]
        elif rec.id in out.updates:
            out.refused.append(f"{update.id}: updated twice; the first kept")
        elif text != rec.text:
            out.updates[rec.id] = text
    for new in result.new:
        text = " ".join(new.text.split())
        if not text:
            continue
        twin = next((k for k, rec in short.items() if repeats(text, rec.text)), None)
        if refusals(text, declared):
            out.refused += [f"new {text!r}: {why}" for why in refusals(text, declared)]
        elif twin is not None:
            out.refused.append(f"new {text!r}: repeats {twin}; dropped")
        elif not any(repeats(text, k.text) for k in out.new):
            category = new.category if new.category in names else ""
            out.new.append(new.model_copy(update={"text": text, "category": category}))
    return out


class SessionExtractor(Processor[SessionExtraction]):
    prompt_name = "session_extractor"
    result_model = SessionExtraction
    reads_project = True

    def extract(self, messages: Sequence[dict[str, Any]], shown: Sequence[MemoryRecord], now_iso: str = "",
                chat_id: str = "default") -> SessionPlan:
        """One model call; raises LLMError when the model fails (the session keeps its messages)."""
        short = shown_view(shown)
        memories = shown_memories(short)
        turns, left_out = recent(messages)
        result: SessionExtraction = self.ask(now=now_iso, chat_id=chat_id, turns=turns, memories=memories)
        out = plan(result, short, declared(self.project))
        out.left_out = left_out
        return out
