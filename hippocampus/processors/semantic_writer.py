"""SemanticWriter: distil stable facts about a person from one episode.

Pure: the episode and the user's similar existing semantic memories in (the caller, the
consolidation job, looks those up), a SemanticExtraction out. Facts already known,
repeated, empty or too long are dropped here, so every caller gets the same dedup.

The fact guard, turned around. A semantic fact is a distillation: "用户是前端开发工程师"
from "我在杭州做前端开发" is right although it keeps neither 杭州 nor the episode's other
facts, so requiring every source fact would reject every good answer. What a distillation
must not do is invent: each number, date, time and name IN a fact must come from what the
model was shown of the episode (its text, context, thing, time and who). Chinese nouns are
not checked: jieba tags paraphrases as names ("喝咖啡" nr, "户外运动" nz) and a distillation
rewords nouns by design, so that check would drop good facts. A fact holding an unsupported
item makes the model answer once more with those items listed; facts that still hold one
are dropped (`facts_path`: "model", "model_retry" or "dropped"), and the supported facts of
both answers are kept. Dropping, not repairing: an invented count cannot be fixed from the text.

Owners stay owners (issue 55): a fact stated about the user ("用户是一名建筑设计师", "The user takes aspirin")
whose words the episode says only in a clause about someone else ("我老公…是一名建筑设计师", "my dad takes
aspirin") is dropped, whoever wrote it; so is a fact that is no statement ("The user says that write ...").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..models import MemoryRecord
from ..text import clauses, key_terms, normalise_fact
from ..text.owners import RELATION_WORD, owners_by_clause, states_user
from .base import Processor, record_view
from .facts import missing
from .results import SemanticExtraction, SemanticFact

FACT_MAX_BYTES = 65535
MAX_EXISTING = 20  # similar facts shown to the model; the dedup below checks every one given
CHECKED_KINDS = ("number", "date", "time", "name")


def episode_view(record: MemoryRecord) -> dict[str, Any]:
    return {**record_view(record), "who": record.who}


def unsupported(fact: str, episode: dict[str, Any]) -> list[str]:
    """The numbers, dates, times and names in `fact` that the episode view does not state."""
    shown = "\n".join(str(episode.get(k) or "") for k in ("text", "context", "thing", "time", "who"))
    return [f.text for f in missing([fact], shown, loose_units=True) if f.kind in CHECKED_KINDS]


class SemanticWriter(Processor[SemanticExtraction]):
    prompt_name = "semantic_writer"
    result_model = SemanticExtraction

    def extract(self, episodic_memory: MemoryRecord, existing_facts: Sequence[str] = ()) -> SemanticExtraction:
        """One model call (two when the guard asks again). Raises LLMError when the first
        call fails; the caller distils the episode on a later run."""
        existing = [str(f) for f in existing_facts if str(f).strip()]
        episode = episode_view(episodic_memory)
        inputs = {"episode": episode, "existing_facts": existing[:MAX_EXISTING]}
        asked = self.ask(**inputs)
        result = dedupe_facts(asked, existing, episode["text"]).answered_by(asked.source)  # a new object: keep who answered
        first_bad = {i: unsupported(f.fact, episode) for i, f in enumerate(result.facts)}
        invented = list(dict.fromkeys(x for items in first_bad.values() for x in items))
        if not invented:
            return result.guarded("model")
        good = [f for i, f in enumerate(result.facts) if not first_bad[i]]
        again = self.ask_again(invented, **inputs)
        retry_facts = dedupe_facts(again, existing, episode["text"]).facts if again is not None else []
        retry_good = [f for f in retry_facts if not unsupported(f.fact, episode)]
        path = "model_retry" if again is not None and len(retry_good) == len(retry_facts) else "dropped"
        return dedupe_facts(SemanticExtraction(facts=good + retry_good), existing).answered_by(asked.source).guarded(path, invented)


def moves_owner(fact: str, source: str) -> bool:
    """The fact names the user as its subject, but the episode's clauses closest to it in words are all
    about someone else ("用户是一名建筑设计师" from "我老公叫李明，是一名建筑设计师")."""
    if not source or not states_user(fact) or RELATION_WORD.search(fact):  # "The user has a daughter, Emma" is his
        return False
    wanted = key_terms(fact) - {"user", "user's"}
    parts = clauses(source)
    scored = [(len(wanted & key_terms(c)), other) for c, other in zip(parts, owners_by_clause(parts))]
    best = max((n for n, _o in scored), default=0)
    return best > 0 and all(other for n, other in scored if n == best)


_NO_STATEMENT = re.compile(r"^\s*the user says that\b|^\s*用户提到(?:请|帮|给)", re.IGNORECASE)


def dedupe_facts(result: SemanticExtraction, existing: Sequence[str], source: str = "") -> SemanticExtraction:
    """Drop empty, oversized, repeated and already-known facts (normalised comparison), and those that move a
    fact of the episode's `source` text to another owner or state nothing."""
    seen = {normalise_fact(f) for f in existing}
    kept: list[SemanticFact] = []
    for item in result.facts:
        fact = " ".join(item.fact.split())
        key = normalise_fact(fact)
        if not key or key in seen or len(fact.encode("utf-8")) > FACT_MAX_BYTES:
            continue
        if _NO_STATEMENT.search(fact) or moves_owner(fact, source):
            continue
        seen.add(key)
        kept.append(SemanticFact(fact=fact))
    return SemanticExtraction(facts=kept)
