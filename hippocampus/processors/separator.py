"""EpisodicSeparator: rewrite two look-alike but different episodes so they stay apart.

Pure: records in, a validated SeparationResult out; the job writes both back in
place (same ids) and re-embeds them.
"""

from __future__ import annotations

from ..models import MemoryRecord
from .base import Processor
from .merger import memory_view
from .results import SeparationResult


class EpisodicSeparator(Processor[SeparationResult]):
    prompt_name = "separator"
    result_model = SeparationResult

    def separate(self, memory_a: MemoryRecord, memory_b: MemoryRecord) -> SeparationResult:
        """Raises LLMError when the model fails; an empty rewritten text keeps the original."""
        result: SeparationResult = self.ask(memory_a=memory_view(memory_a), memory_b=memory_view(memory_b))
        return result.model_copy(
            update={
                "text_a": (result.text_a or "").strip() or memory_a.text,
                "text_b": (result.text_b or "").strip() or memory_b.text,
            }
        )
