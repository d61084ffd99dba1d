"""EpisodicReconsolidator: a recalled memory that the answer used is updated by what the
conversation adds to or corrects in it.

Pure: `reconsolidate` asks the model; `apply_reconsolidation` computes the new text and
metadata. It keeps metadata.time, chatid and who as they were (the record's chat_id and
who columns are never rewritten by the facade) and appends one {time, desc} entry to
metadata.updates.

The fact guard (facts.py): an updated text must keep every fact of the old one, except a
number, date or time that the conversation corrects (the text then states the conversation's
new value of the same kind: "moved to Friday" replaces "Wednesday"). A text that loses a fact
is asked for once more with the lost facts listed; if the second text still loses one, the
old text's clauses holding them are appended as "(earlier: ...)" / "（此前：…）" to the first
answer's text (`facts_path`: model, model_retry, union).
"""

from __future__ import annotations

import logging
from typing import Any

from ..models import MemoryRecord
from .base import Processor, record_view
from .facts import missing, replaced, supplement
from .results import ReconsolidationResult

log = logging.getLogger(__name__)
PRESERVED = ("time", "chatid", "who")


def recalled_view(record: MemoryRecord) -> dict[str, Any]:
    """What the reconsolidation prompt shows of the recalled memory."""
    updates = [u.get("desc", "") for u in record.metadata.get("updates") or [] if isinstance(u, dict)]
    return {**record_view(record), "updates": updates[-3:]}


class EpisodicReconsolidator(Processor[ReconsolidationResult]):
    prompt_name = "reconsolidator"
    result_model = ReconsolidationResult

    def reconsolidate(self, old_memory: MemoryRecord, current_context: str, now_iso: str = "") -> ReconsolidationResult:
        """One model call (two when the fact guard asks again). Raises LLMError when the first
        call fails; the caller leaves the memory unchanged. A retry that says "unchanged" is kept."""
        inputs = {"now": now_iso, "memory": recalled_view(old_memory), "conversation": current_context}
        result = self._effective(old_memory, self.ask(**inputs))
        if not (result.changed and result.text.strip()):
            return result  # unchanged, or the old text kept (only context/thing updated)
        lost = [f.text for f in _lost(old_memory.text, result.text, current_context)]
        if not lost:
            return result.guarded("model")
        again = self.ask_again(lost, **inputs)
        if again is not None:
            again = self._effective(old_memory, again)
            if not (again.changed and again.text.strip()) or not _lost(old_memory.text, again.text, current_context):
                return again.guarded("model_retry", lost)
        text = supplement(result.text.strip(), old_memory.text, note=("earlier", "此前"))
        return result.model_copy(update={"text": text}).guarded("union", lost)

    @staticmethod
    def _effective(old_memory: MemoryRecord, result: ReconsolidationResult) -> ReconsolidationResult:
        if result.changed and not is_effective(old_memory, result):
            log.info("reconsolidator said 'changed' for memory %s but gave nothing new; kept as is", old_memory.id)
            return result.model_copy(update={"changed": False})
        return result


def _lost(old_text: str, new_text: str, conversation: str) -> list:
    """The old text's facts that the new text neither keeps nor replaces by a correction."""
    return [f for f in missing([old_text], new_text) if not replaced(f, new_text, conversation)]


def is_effective(old: MemoryRecord, result: ReconsolidationResult) -> bool:
    """Does the result say anything new (text, context, thing or a description)?"""
    return bool(
        (result.text.strip() and result.text.strip() != old.text)
        or (result.context.strip() and result.context.strip() != str(old.metadata.get("context") or ""))
        or (result.thing.strip() and result.thing.strip() != str(old.metadata.get("thing") or ""))
        or result.update_desc.strip()
    )


def apply_reconsolidation(
    old: MemoryRecord, result: ReconsolidationResult, now_iso: str, current_context: str = ""
) -> tuple[str, dict[str, Any]]:
    """(new text, new metadata) for a `changed` result.

    metadata.time, chatid and who keep their old values (or stay absent), whatever the
    model wrote; metadata.updates grows by exactly one {time, desc}.
    """
    meta = dict(old.metadata)
    text = result.text.strip() or old.text
    if result.context.strip():
        meta["context"] = result.context.strip()
    if result.thing.strip():
        meta["thing"] = result.thing.strip()
    desc = result.update_desc.strip() or _default_desc(current_context)
    updates = [u for u in (meta.get("updates") or []) if isinstance(u, dict)]
    meta["updates"] = [*updates, {"time": now_iso, "desc": desc}]
    for key in PRESERVED:
        if key in old.metadata:
            meta[key] = old.metadata[key]
        else:
            meta.pop(key, None)
    return text, meta


def _default_desc(current_context: str) -> str:
    context = " ".join(current_context.split())
    return f"updated from conversation: {context[:200]}" if context else "updated from conversation"
