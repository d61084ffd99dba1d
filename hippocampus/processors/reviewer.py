"""MemoryReviewer: at a review threshold (score reaching 0.9, or falling to the archive
line) one model call decides PROMOTE (to core), KEEP or DELETE; it may first ask for up to three
searches, whose results come back in one more call. Pure: the memory, related texts and a search
function in, a validated ReviewResult out; the decay step (lifecycle/decay.py) applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..models import MemoryRecord
from .base import Processor
from .results import ReviewResult

MAX_QUERIES = 3


def review_view(record: MemoryRecord) -> dict[str, object]:
    life = record.life
    return {"text": record.text, "category": life.category.value, "uses": life.activation_count, "time": record.time_iso}


class MemoryReviewer(Processor[ReviewResult]):
    prompt_name = "memory_reviewer"
    result_model = ReviewResult

    def review(self, record: MemoryRecord, trigger: str, related: Sequence[str] = (),
               search: Callable[[str], list[str]] | None = None) -> ReviewResult:
        """promote, keep or delete (never "search": a second search request counts as keep; a
        delete on the "high" trigger counts as keep too). Raises LLMError when the model fails."""
        inputs = {"trigger": trigger, "memory": review_view(record), "related": list(related)[:5], "searched": []}
        result = self.ask(**inputs)
        if result.action == "search":
            found: list[str] = []
            for query in [q for q in result.queries if str(q).strip()][:MAX_QUERIES]:
                found += [f"{query} -> {text}" for text in (search(query) if search else [])[:3]]
            result = self.ask(**{**inputs, "searched": found})
        if result.action == "search" or (result.action == "delete" and trigger != "low"):
            return result.model_copy(update={"action": "keep"})
        return result
