"""The validated results of the five processors: what a model's JSON must look like.

Short, explicit keys, so that small local models can fill them; every optional field
has a safe default, so a model that omits it still validates. These models are also
the JSON schemas that LLMClient sends as `response_format`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator

from ..models.base import Model


def _iso_or_empty(value: object) -> str:
    """ISO 8601 or "": a model's "unknown", "N/A" or "昨天" becomes "" (the caller keeps the turn's time)."""
    if value is None:
        return ""
    text = str(value).strip()
    if not text:
        return ""
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return text


class SlotStatement(Model):
    """One slot the turn fills (text/slots.Statement, as a model writes it): who, which attribute, the new
    value and the value taken back. The offline rules read the same from the text."""

    subject: str = Field(default="user", description='"user", a relation ("husband", "sister"), a pet ("dog") or "other"')
    attribute: str = Field(description="name, age, home, employer, job, school, income, rent, price, amount, diet, allergy, "
                                       "medication, vehicle, relationship, phone, email, schedule, answer_language or answer_length")
    value: str | None = Field(default=None, description="the value now, or null when the turn only takes one back")
    old: str | None = Field(default=None, description='the value the turn says is no longer true ("not Y", "left Y"), or null')


class WriteDecision(Model):
    """EpisodicWriteDecider: is this turn worth remembering as an episode, and what is it about."""

    write_episodic: bool = Field(description="true only for personal information or events worth remembering")
    context: str = Field(default="", description="background or scene, one short phrase")
    thing: str = Field(default="", description="what happened or what the person said about themselves")
    time: str = Field(default="", description="when it happened, ISO 8601, or empty")
    who: str = Field(default="", description="whose memory this is (the speaker), or empty")
    reason: str = Field(default="", description="one short sentence")
    statements: list[SlotStatement] = Field(default_factory=list, description="the slots the turn states, if any")

    _time = field_validator("time", mode="before")(lambda cls, v: _iso_or_empty(v))


class GuardedResult(Model):
    """A result whose text the fact guard checked (processors/facts.py). `facts_path` says how
    the text came about: "model" (the first answer kept every fact), "model_retry" (the
    second answer did), "union" (the deterministic fallback; "dropped" for the SemanticWriter,
    whose unsupported facts are left out); `facts_missing` lists what the first answer lost.
    Answered by the offline rules (`llm_provider: offline`), "model" reads "rules" ("rules_retry").
    Private attributes: set by the processor, never by the model, and not in the JSON schema."""

    _facts_path: str = PrivateAttr(default="model")
    _answered_by: str = PrivateAttr(default="model")  # "rules" when the offline provider answered (Processor.ask)
    _facts_missing: list[str] = PrivateAttr(default_factory=list)

    @property
    def facts_path(self) -> str:
        return self._facts_path

    @property
    def facts_missing(self) -> list[str]:
        return list(self._facts_missing)

    @property
    def source(self) -> str:
        """Who answered: "model" or "rules" (the offline provider)."""
        return self._answered_by

    @property
    def asked_again(self) -> bool:
        """The fact guard asked a second time (model_retry, union, dropped): one more call."""
        return self._facts_path not in ("model", "rules")

    def answered_by(self, source: str):  # -> Self
        """Mark who answered ("model" or "rules"); Processor.ask calls it."""
        self._answered_by = source
        self._facts_path = source if self._facts_path in ("model", "rules") else self._facts_path
        return self

    def guarded(self, path: str, missing: list[str] | None = None):  # -> Self
        if path.startswith("model") and self._answered_by != "model":
            path = self._answered_by + path[len("model"):]
        out = self.model_copy()
        out._facts_path, out._facts_missing = path, list(missing or [])
        return out

    def facts_details(self) -> dict[str, object]:
        """What a history event records of the guard."""
        return {"facts_path": self._facts_path, "facts_missing": list(self._facts_missing)}


class ReconsolidationResult(GuardedResult):
    """EpisodicReconsolidator: does the current conversation add to or correct a recalled memory."""

    changed: bool = Field(description="true when the conversation adds to or corrects the memory")
    text: str = Field(default="", description="the whole updated memory text")
    context: str = Field(default="", description="updated background, or empty to keep it")
    thing: str = Field(default="", description="updated event, or empty to keep it")
    update_desc: str = Field(default="", description="what changed, one short sentence")


class SemanticFact(Model):
    fact: str = Field(description="one stable fact about the person, a short sentence")


class SemanticExtraction(GuardedResult):
    """SemanticWriter: stable facts in an episode that the person's memory does not hold yet."""

    facts: list[SemanticFact] = Field(default_factory=list)


class MergeResult(GuardedResult):
    """EpisodicMerger: are two similar episodes the same event, and if so, the merged text."""

    same_event: bool = Field(description="true only when both memories describe the same real event")
    text: str = Field(default="", description="merged memory text when same_event, else empty")
    context: str = Field(default="", description="merged background when same_event, else empty")
    thing: str = Field(default="", description="merged event when same_event, else empty")
    reason: str = Field(default="", description="one short sentence")


class SeparationResult(GuardedResult):
    """EpisodicSeparator: two look-alike but different episodes rewritten so they stay apart."""

    text_a: str = Field(description="memory A rewritten with what distinguishes it")
    text_b: str = Field(description="memory B rewritten with what distinguishes it")
    context_a: str = Field(default="", description="memory A's distinguishing context")
    context_b: str = Field(default="", description="memory B's distinguishing context")
    reason: str = Field(default="", description="one short sentence")


class SupersedeResult(Model):
    """ContradictionJudge: which older facts the new one replaces (newest wins). A change over time
    ("was nervous", "now relaxed") is no contradiction: both stay, each with its time."""

    superseded: list[int] = Field(default_factory=list, description="numbers of the older facts the new fact makes untrue now")
    reason: str = Field(default="", description="one short sentence")


class ReviewResult(Model):
    """MemoryReviewer: a memory at a review threshold is promoted to core, kept, or
    deleted; "search" asks for up to 3 searches first (their results come back in a second call)."""

    action: Literal["promote", "keep", "delete", "search"] = Field(description="promote, keep, delete, or search first")
    queries: list[str] = Field(default_factory=list, description="with search: up to 3 short search queries")
    reason: str = Field(default="", description="one short sentence")

    _action = field_validator("action", mode="before")(lambda cls, v: str(v).strip().lower() if isinstance(v, str) else v)


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


class MonitorAdd(Model):
    """A new memory the KnowledgeMonitor found in the turn."""

    text: str = Field(description="the new memory, one short self-contained sentence")
    category: str = Field(default="", description="preference, fact, experience, workflow, decision, skill_usage or todo")
    importance: Literal["high", "medium", "low"] = Field(default="medium", description="high, medium or low")

    _category = field_validator("category", mode="before")(lambda cls, v: _lower(v) if v is not None else "")
    _importance = field_validator("importance", mode="before")(lambda cls, v: _lower(v) or "medium")


class MonitorVerdict(Model):
    """What the KnowledgeMonitor says of one shown memory (by its short id)."""

    id: str = Field(description="the short id of a shown memory, e.g. m1")
    action: Literal["update", "boost", "delete", "skip"] = Field(default="skip", description="update, boost, delete or skip")
    used: bool = Field(default=False, description="true only when the answer actually relied on this memory")
    text: str = Field(default="", description="with update: the whole corrected memory text")
    reason: str = Field(default="", description="one short sentence")

    _id = field_validator("id", mode="before")(lambda cls, v: str(v).strip().strip("[]").lower() if v is not None else "")
    _action = field_validator("action", mode="before")(lambda cls, v: _lower(v) or "skip")


class MonitorResult(Model):
    """KnowledgeMonitor: after a turn, in one call, what to add and what to do
    with each memory shown for it (ADD / UPDATE / BOOST / DELETE / SKIP) and which were used."""

    add: list[MonitorAdd] = Field(default_factory=list, description="new memories worth keeping from this turn")
    memories: list[MonitorVerdict] = Field(default_factory=list, description="one entry per shown memory")
    reason: str = Field(default="", description="one short sentence")


class CompressionResult(Model):
    """FactCompressor: related old facts of one user as fewer facts, or as one pattern; every number,
    date and name of the sources kept (the newest value where they disagree)."""

    facts: list[str] = Field(description="the compressed facts, each one short self-contained sentence")
    reason: str = Field(default="", description="one short sentence")


class RecallPlan(Model):
    """RecallPlanner: can the agent answer from the conversation and what was recalled so far, and
    if not, what it still needs to recall (one short search query)."""

    can_answer: bool = Field(default=False, description="true when the conversation and the recalled memories are enough")
    need: str = Field(default="", description="when not: what to recall, as one short search query; else empty")
    reason: str = Field(default="", description="one short sentence")


class SessionUpdate(Model):
    """A shown memory (by its short id) that the session corrected or completed."""

    id: str = Field(description="the short id of a shown memory, e.g. m1")
    text: str = Field(default="", description="the whole corrected memory text")
    reason: str = Field(default="", description="one short sentence")

    _id = field_validator("id", mode="before")(lambda cls, v: str(v).strip().strip("[]").lower() if v is not None else "")


class SessionExtraction(Model):
    """SessionExtractor: at the end of a session (or when its buffer fills), in one call, the new
    memories it holds and the corrections to the memories shown (by short id); nothing else."""

    new: list[MonitorAdd] = Field(default_factory=list, description="new memories worth keeping from this session")
    updates: list[SessionUpdate] = Field(default_factory=list, description="corrections of shown memories, by short id")
    reason: str = Field(default="", description="one short sentence")


class ToolContext(Model):
    """ToolContextCondenser: what of a tool's result the next turn needs, in a few sentences."""

    useful: bool = Field(default=True, description="false when nothing in the result helps the next turn")
    context: str = Field(default="", description="what the next turn needs to know, 1-3 short sentences; empty when not useful")


ENTITY_TYPES = ("person", "place", "organisation", "thing", "event", "concept", "time")
_TYPE_SYNONYMS = {"organization": "organisation", "org": "organisation", "company": "organisation", "location": "place",
                  "people": "person", "human": "person", "object": "thing", "other": "thing", "date": "time"}


def _entity_type(value: object) -> str:
    """One of ENTITY_TYPES: common spellings mapped ("organization", "location"), anything else "thing"."""
    text = str(value or "").strip().lower()
    text = _TYPE_SYNONYMS.get(text, text)
    return text if text in ENTITY_TYPES else "thing"


def _text_or_empty(value: object) -> str:
    """A model's null, "none" or "null" for an optional field becomes "" (no frequency, no condition)."""
    if value is None:
        return ""
    text = " ".join(str(value).split())
    return "" if text.lower() in ("none", "null", "n/a", "无") else text


def _short_id(value: object) -> str:
    """"m1", "[m1]", "M1" and a bare 1 all become "m1"; the processor refuses ids it did not show."""
    text = str(value).strip().strip("[]").lower() if value is not None else ""
    return f"m{text}" if text.isdigit() else text


class GraphEntity(Model):
    """A named person, place, organisation, thing, event, concept or time in a memory (graph memory)."""

    name: str = Field(description="the name as the memory says it, e.g. Caroline, 杭州, LGBTQ support group")
    type: str = Field(default="thing", description="person, place, organisation, thing, event, concept or time")

    _name = field_validator("name", mode="before")(lambda cls, v: "" if v is None else str(v))
    _type = field_validator("type", mode="before")(lambda cls, v: _entity_type(v))


class GraphTriple(Model):
    """subject / predicate / object with its negation, frequency (a degree or
    frequency adverb: 很, often, always) and condition (when it holds; "" when always)."""

    subject: str = Field(description="who or what the fact is about, a name")
    predicate: str = Field(description="a short verb phrase in the memory's language: lives in, sister of, 喜欢")
    object: str = Field(description="the other entity, a name")
    negated: bool = Field(default=False, description="true when the memory says it is not so (不喜欢, doesn't like)")
    frequency: str = Field(default="", description="degree or frequency adverb as said (很, often, always), or empty")
    condition: str = Field(default="", description="when it holds (下雨的时候, when it's cold), or empty")

    _names = field_validator("subject", "predicate", "object", mode="before")(lambda cls, v: "" if v is None else str(v))
    _negated = field_validator("negated", mode="before")(lambda cls, v: False if v is None or v == "" else v)
    _optional = field_validator("frequency", "condition", mode="before")(lambda cls, v: _text_or_empty(v))


class TripleItem(Model):
    """The entities and triples of one shown memory, by its short id."""

    id: str = Field(description="the short id of a shown memory, e.g. m1")
    entities: list[GraphEntity] = Field(default_factory=list)
    triples: list[GraphTriple] = Field(default_factory=list)

    _id = field_validator("id", mode="before")(lambda cls, v: _short_id(v))


class TripleExtraction(Model):
    """TripleExtractor: for each shown memory (by short id), its entities and subject / predicate /
    object triples; triples are by-products of memories, each supported by the memory it came from."""

    items: list[TripleItem] = Field(default_factory=list, description="one entry per shown memory")
    reason: str = Field(default="", description="one short sentence")
