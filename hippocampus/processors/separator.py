"""EpisodicSeparator: rewrite two look-alike but different episodes so they stay apart.

Pure: records in, a validated SeparationResult out; the job writes both back in
place (same ids) and re-embeds them.

The fact guard (facts.py): each rewritten text must keep every fact of its own original
(the prompt says "never drop a fact"). When one loses a fact the model is asked once more
with the lost facts listed per memory; a text that still loses one becomes its original
plus the clauses of the model's text that add something (a date, a distinguishing detail).
"""

from __future__ import annotations

from ..models import MemoryRecord
from .base import Processor
from .facts import missing, supplement
from .merger import memory_view
from .results import SeparationResult


class EpisodicSeparator(Processor[SeparationResult]):
    prompt_name = "separator"
    result_model = SeparationResult

    def separate(self, memory_a: MemoryRecord, memory_b: MemoryRecord) -> SeparationResult:
        """Raises LLMError when the model fails; an empty rewritten text keeps the original."""
        inputs = {"memory_a": memory_view(memory_a), "memory_b": memory_view(memory_b)}
        result = _filled(self.ask(**inputs), memory_a, memory_b)
        lost = _lost(result, memory_a, memory_b)
        if not any(lost.values()):
            return result.guarded("model")
        first = [x for items in lost.values() for x in items]
        again = self.ask_again(lost, **inputs)
        if again is not None:
            again = _filled(again, memory_a, memory_b)
            if not any(_lost(again, memory_a, memory_b).values()):
                return again.guarded("model_retry", first)
        return result.model_copy(
            update={
                "text_a": supplement(memory_a.text, result.text_a) if lost["memory_a"] else result.text_a,
                "text_b": supplement(memory_b.text, result.text_b) if lost["memory_b"] else result.text_b,
            }
        ).guarded("union", first)


def _filled(result: SeparationResult, memory_a: MemoryRecord, memory_b: MemoryRecord) -> SeparationResult:
    return result.model_copy(
        update={
            "text_a": (result.text_a or "").strip() or memory_a.text,
            "text_b": (result.text_b or "").strip() or memory_b.text,
        }
    )


def _lost(result: SeparationResult, memory_a: MemoryRecord, memory_b: MemoryRecord) -> dict[str, list[str]]:
    return {
        "memory_a": [f.text for f in missing([memory_a.text], result.text_a)],
        "memory_b": [f.text for f in missing([memory_b.text], result.text_b)],
    }
