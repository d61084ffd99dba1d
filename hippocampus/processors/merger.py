"""EpisodicMerger: are two similar episodes one event? If so, their merged text.

Similarity only proposes the pair (with e5, two dentist visits score like duplicates);
this processor judges `same_event`, and the consolidation job never merges a pair it
judged different. Pure: records in, a validated MergeResult out, no store access.
"""

from __future__ import annotations

from typing import Any

from ..models import MemoryRecord
from .base import Processor, record_view
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
        event", so an unusable answer can never delete a memory.
        """
        result: MergeResult = self.ask(memory_a=memory_view(memory_a), memory_b=memory_view(memory_b))
        if result.same_event and not (result.text or "").strip():
            return result.model_copy(update={"same_event": False, "reason": f"no merged text given ({result.reason})"})
        return result
