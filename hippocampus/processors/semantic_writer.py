"""SemanticWriter: distil stable facts about a person from one episode (seed 002, Property 13).

Pure: the episode and the user's similar existing semantic memories in (the caller, the
consolidation job, looks those up), a SemanticExtraction out. Facts already known,
repeated, empty or too long are dropped here, so every caller gets the same dedup.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..llm.rules.writing import normalise_fact
from ..models import MemoryRecord
from .base import Processor, record_view
from .results import SemanticExtraction, SemanticFact

FACT_MAX_BYTES = 65535
MAX_EXISTING = 20  # similar facts shown to the model; the dedup below checks every one given


def episode_view(record: MemoryRecord) -> dict[str, Any]:
    return {**record_view(record), "who": record.who}


class SemanticWriter(Processor[SemanticExtraction]):
    prompt_name = "semantic_writer"
    result_model = SemanticExtraction

    def extract(self, episodic_memory: MemoryRecord, existing_facts: Sequence[str] = ()) -> SemanticExtraction:
        """One model call. Raises LLMError when the model fails; the caller distils the episode on a later run."""
        existing = [str(f) for f in existing_facts if str(f).strip()]
        result: SemanticExtraction = self.ask(episode=episode_view(episodic_memory), existing_facts=existing[:MAX_EXISTING])
        return dedupe_facts(result, existing)


def dedupe_facts(result: SemanticExtraction, existing: Sequence[str]) -> SemanticExtraction:
    """Drop empty, oversized, repeated and already-known facts (normalised comparison)."""
    seen = {normalise_fact(f) for f in existing}
    kept: list[SemanticFact] = []
    for item in result.facts:
        fact = " ".join(item.fact.split())
        key = normalise_fact(fact)
        if not key or key in seen or len(fact.encode("utf-8")) > FACT_MAX_BYTES:
            continue
        seen.add(key)
        kept.append(SemanticFact(fact=fact))
    return SemanticExtraction(facts=kept)
