"""TripleExtractor (graph memory, issue 16): one model call reads up to BATCH memories (under short
ids m1, m2, ...) and says, per memory, which entities it names and which subject / predicate /
object triples it states, with their negation, frequency and condition. Triples are
by-products of memories: the caller stores each one supported by the id of the memory it came from.
It runs in consolidation, batched, never on the add path.

Pure: records in, one checked `ExtractedGraph` per record out, in the input's order. The checks are
the processor's, not the model's:
- an item whose id was not shown is dropped (and logged); two items with the same id are joined;
- names (entity names, subject, predicate, object) are whitespace-collapsed and stripped; a triple
  with an empty subject, predicate or object, or any of them over MAX_NAME characters, is dropped,
  as is an entity with such a name;
- first-person names ("I", "me", "my", "我", "user", "the user", "用户") become the record's speaker:
  the leading "Name: " of its text when there is one (LoCoMo-style "Caroline: I went to..."),
  else its `who`; triples about the assistant ("assistant", "助手") are dropped (the prompt forbids them);
- duplicate triples (same subject, predicate, object, negation, case-insensitive) and duplicate
  entities (same name, case-insensitive; a specific type wins over "thing") are dropped;
- every triple's subject and object is among its memory's entities (added as "thing" when the
  model forgot them; the speaker as "person").
Raises LLMError when the model fails: the caller keeps the memories for the next run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import Field

from ..errors import InvalidInput
from ..models import MemoryRecord, ts_to_iso
from ..models.base import Model
from .base import Processor
from .results import GraphEntity, GraphTriple, TripleExtraction, TripleItem

log = logging.getLogger(__name__)

BATCH = 8  # memories per model call: the caller chunks
MAX_NAME = 100  # a longer "name" is a sentence the model copied, not an entity
FIRST_PERSON = frozenset({"i", "me", "my", "myself", "mine", "我", "我自己", "user", "the user", "用户"})
ASSISTANT = frozenset({"assistant", "the assistant", "ai assistant", "助手", "ai助手"})
# "Caroline: ..." or "Dr. Wang: ..." or "小雨：..." at the start of a text names its speaker; role labels do not.
_SPEAKER = re.compile(r"^\s*(?:([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2})\s*:\s|((?:(?![我你他她的])[\u4e00-\u9fff]){2,3})\s*[:：])")
_NOT_A_SPEAKER = {"user", "assistant", "system", "note", "update", "todo", "reminder", "summary", "edit", "ps", "q", "a",
                  "re", "用户", "助手", "系统", "备注", "注意", "提醒", "计划", "总结", "问题", "回答", "时间", "地点",
                  "今天", "明天", "昨天", "更新"}

__all__ = ["BATCH", "ExtractedGraph", "TripleExtractor", "speaker_of"]


class ExtractedGraph(Model):
    """The checked entities and triples of one memory (the store's id, not the short id)."""

    memory_id: int
    entities: list[GraphEntity] = Field(default_factory=list)
    triples: list[GraphTriple] = Field(default_factory=list)


def speaker_of(record: MemoryRecord) -> str:
    """Who "I" is in this memory: the text's leading "Name: " when there is one, else `who`."""
    m = _SPEAKER.match(record.text)
    name = (m.group(1) or m.group(2)) if m else ""
    if name and name.lower() not in _NOT_A_SPEAKER:
        return name
    return record.who


def _day(record: MemoryRecord) -> str:
    """The memory's date (ISO): enough for "yesterday" in the text, and shorter than a timestamp."""
    try:
        return datetime.fromisoformat(record.time_iso.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return ts_to_iso(record.ts)[:10]


def _clean(name: str) -> str:
    return " ".join(str(name).split())


def _who(name: str, speaker: str) -> str:
    """A first-person name becomes the speaker; any other name is kept as it is."""
    return speaker if name.lower() in FIRST_PERSON and speaker else name


def _usable(name: str) -> bool:
    return 0 < len(name) <= MAX_NAME


def check(items: Sequence[TripleItem], speaker: str, memory_id: int) -> ExtractedGraph:
    """One memory's items (already matched to it by short id), checked as the module says. Pure."""
    entities: dict[str, GraphEntity] = {}
    triples: dict[tuple[str, str, str, bool], GraphTriple] = {}

    def add_entity(name: str, kind: str) -> None:
        key = name.casefold()
        old = entities.get(key)
        if old is None:
            entities[key] = GraphEntity(name=name, type=kind)
        elif old.type == "thing" and kind != "thing":
            entities[key] = old.model_copy(update={"type": kind})

    for item in items:
        for entity in item.entities:
            name = _clean(entity.name)
            me = name.lower() in FIRST_PERSON
            name = _who(name, speaker)
            if _usable(name) and name.lower() not in ASSISTANT:
                add_entity(name, "person" if me else entity.type)
        for triple in item.triples:
            subject, predicate, obj = _clean(triple.subject), _clean(triple.predicate), _clean(triple.object)
            subject, obj = _who(subject, speaker), _who(obj, speaker)
            if not all(_usable(x) for x in (subject, predicate, obj)):
                continue
            if subject.lower() in ASSISTANT or obj.lower() in ASSISTANT:
                continue
            key = (subject.casefold(), predicate.casefold(), obj.casefold(), triple.negated)
            if key in triples:
                continue
            triples[key] = triple.model_copy(update={"subject": subject, "predicate": predicate, "object": obj,
                                                     "frequency": _clean(triple.frequency),
                                                     "condition": _clean(triple.condition)})
            for name in (subject, obj):
                add_entity(name, "person" if name == speaker else "thing")
    return ExtractedGraph(memory_id=memory_id, entities=list(entities.values()), triples=list(triples.values()))


class TripleExtractor(Processor[TripleExtraction]):
    prompt_name = "triple_extractor"
    result_model = TripleExtraction

    def extract(self, records: Sequence[MemoryRecord]) -> list[ExtractedGraph]:
        """One model call for up to BATCH records; one ExtractedGraph per record, in their order.
        Raises InvalidInput for more than BATCH (the caller chunks) and LLMError when the model fails."""
        records = list(records)
        if len(records) > BATCH:
            raise InvalidInput(f"TripleExtractor takes at most {BATCH} memories per call, got {len(records)}")
        if not records:
            return []
        short = {f"m{i}": rec for i, rec in enumerate(records, 1)}
        speakers = {key: speaker_of(rec) for key, rec in short.items()}
        shown: list[dict[str, Any]] = [{"id": key, "speaker": speakers[key], "time": _day(rec), "text": rec.text}
                                       for key, rec in short.items()]
        result: TripleExtraction = self.ask(memories=shown)
        by_id: dict[str, list[TripleItem]] = {key: [] for key in short}
        for item in result.items:
            if item.id in by_id:
                by_id[item.id].append(item)
            else:
                log.info("triple_extractor: item %r was not among the memories shown; dropped", item.id or "(no id)")
        return [check(by_id[key], speakers[key], rec.id) for key, rec in short.items()]
