"""KnowledgeMonitor: after a turn, one model call sees the turn and the
memories retrieved for it (under short ids m1, m2, ...) and says what to add, and per memory
UPDATE / BOOST / DELETE / SKIP and whether the answer actually used it (retrieved is not used).

Pure: turns and records in, a checked `MonitorPlan` out; `observe.py` applies it. The checks are
the processor's, not the model's: an id outside the shown set is refused, core and system memories
are never updated or deleted, an "add" that repeats a shown memory becomes a boost of it (no
duplicate candidates), and at most 50 memories are shown (a top-50 bound on the model's input).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import MemoryRecord
from ..text import key_terms
from .base import Processor
from .results import MonitorAdd, MonitorResult

MAX_SHOWN = 50
_PERMANENT = ("core", "system")
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


@dataclass
class MonitorPlan:
    """What one monitor call decided, checked: memory ids are the store's, not the short ids."""

    adds: list[MonitorAdd] = field(default_factory=list)
    updates: dict[int, str] = field(default_factory=dict)
    boosted: list[int] = field(default_factory=list)
    used: list[int] = field(default_factory=list)
    deletes: dict[int, str] = field(default_factory=dict)  # id -> the model's reason
    refused: list[str] = field(default_factory=list)
    reason: str = ""


def shown_view(shown: Sequence[MemoryRecord]) -> dict[str, MemoryRecord]:
    """The short ids the model sees: m1 for the first (best) retrieved memory, at most MAX_SHOWN."""
    return {f"m{i}": rec for i, rec in enumerate(list(shown)[:MAX_SHOWN], 1)}


def shown_memories(short: dict[str, MemoryRecord]) -> list[dict[str, Any]]:
    """What the model sees of each shown memory: its short id, text, category and time."""
    return [{"id": key, "text": rec.text, "category": rec.life.category.value, "time": rec.time_iso} for key, rec in short.items()]


def _norm(text: str) -> str:
    return _PUNCT.sub("", unicodedata.normalize("NFKC", text).casefold())


def _terms(text: str) -> set[str]:
    """Content words with a plural or third-person "s" folded, minus "user" (a fact's own subject)."""
    out = set()
    for term in key_terms(text):
        if term.isascii() and len(term) > 3 and term.endswith("s"):
            term = term[:-1]
        out.add(term)
    return out - {"user"}


def repeats(new: str, old: str) -> bool:
    """`new` says nothing that `old` does not: equal after normalising, or its content words all in old's."""
    if _norm(new) == _norm(old):
        return True
    terms = _terms(new)
    return bool(terms) and terms <= _terms(old)


def plan(result: MonitorResult, short: dict[str, MemoryRecord]) -> MonitorPlan:
    """Check the model's answer against what it was shown. Pure."""
    out = MonitorPlan(reason=result.reason)
    seen: set[str] = set()
    for verdict in result.memories:
        rec = short.get(verdict.id)
        if rec is None:
            out.refused.append(f"{verdict.id or '(no id)'}: not among the memories shown; ignored")
            continue
        if verdict.id in seen:
            continue
        seen.add(verdict.id)
        if verdict.used:
            out.used.append(rec.id)
        if verdict.action == "boost":
            out.boosted.append(rec.id)
        permanent = rec.life.category.value in _PERMANENT
        if verdict.action in ("update", "delete") and permanent:
            out.refused.append(f"{verdict.id}: a {rec.life.category.value} memory is never {verdict.action}d by the monitor")
        elif verdict.action == "update":
            text = " ".join(verdict.text.split())
            if not text:
                out.refused.append(f"{verdict.id}: update without a text; ignored")
            elif text != rec.text:
                out.updates[rec.id] = text
        elif verdict.action == "delete":
            out.deletes[rec.id] = verdict.reason
    kept: list[MonitorAdd] = []
    for add in result.add:
        text = " ".join(add.text.split())
        if not text:
            continue
        twin = next((k for k, rec in short.items() if repeats(text, rec.text)), None)
        if twin is not None:
            out.refused.append(f"add {text!r}: repeats {twin}; boosted instead")
            if short[twin].id not in out.boosted:
                out.boosted.append(short[twin].id)
        elif not any(repeats(text, k.text) for k in kept):
            kept.append(add.model_copy(update={"text": text}))
    out.adds = kept
    return out


class KnowledgeMonitor(Processor[MonitorResult]):
    prompt_name = "knowledge_monitor"
    result_model = MonitorResult
    reads_project = True

    def observe(self, turns: Sequence[dict[str, str]], shown: Sequence[MemoryRecord], now_iso: str = "",
                chat_id: str = "default") -> MonitorPlan:
        """One model call; raises LLMError when the model fails (the caller keeps the turn raw)."""
        short = shown_view(shown)
        memories = shown_memories(short)
        turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
        result: MonitorResult = self.ask(now=now_iso, chat_id=chat_id, turns=turns, memories=memories)
        return plan(result, short)
