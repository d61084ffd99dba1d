"""EpisodicMerger: are two similar episodes one event? If so, their merged text.

Similarity only proposes the pair (with e5, two dentist visits score like duplicates);
this processor judges `same_event`, and the consolidation job never merges a pair it
judged different. Pure: records in, a validated MergeResult out, no store access.

The fact guard (facts.py): a merged text must keep every fact of both sources. Small
models often repeat memory A word for word and put the union in `thing`; then the model
is asked once more with the lost facts listed, and if its second text still loses one,
the merged text is the deterministic union of the two sources (`facts_path` says which).
"""

from __future__ import annotations

from typing import Any

from ..models import MemoryRecord
from .base import Processor, record_view
from .facts import missing, union
from .results import MergeResult


def memory_view(record: MemoryRecord) -> dict[str, Any]:
    """What a consolidation prompt shows of a record (and what the offline rules read)."""
    return {"id": record.id, **record_view(record), "chat_id": record.chat_id, "who": record.who}


class EpisodicMerger(Processor[MergeResult]):
    prompt_name = "merger"
    result_model = MergeResult

    def merge(self, memory_a: MemoryRecord, memory_b: MemoryRecord) -> MergeResult:
        """Raises LLMError when the model fails; the caller then merges nothing.

        A reply that says same_event but gives no text is treated as "not the same
        event", so an unusable answer can never delete a memory. A same-event text that
        loses a fact of either source goes through the fact guard: one retry, then the union.
        A retry that says "not the same event" is taken at its word (nothing merges).
        """
        inputs = {"memory_a": memory_view(memory_a), "memory_b": memory_view(memory_b)}
        result = _usable(self.ask(**inputs))
        if not result.same_event:
            return result
        sources = [memory_a.text, memory_b.text]
        lost = [f.text for f in missing(sources, result.text)]
        if not lost:
            return result.guarded("model")
        again = self.ask_again(lost, **inputs)
        if again is not None:
            again = _usable(again)
            if not again.same_event or not missing(sources, again.text):
                return again.guarded("model_retry", lost)
        # the sources' own words, and their own context and thing (the job joins them)
        return result.model_copy(update={"text": union(*sources), "context": "", "thing": ""}).guarded("union", lost)


def _usable(result: MergeResult) -> MergeResult:
    if result.same_event and not (result.text or "").strip():
        return result.model_copy(update={"same_event": False, "reason": f"no merged text given ({result.reason})"})
    return result
