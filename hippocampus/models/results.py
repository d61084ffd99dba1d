"""What the verbs give back: search hits and results, what add, observe and undo did, a page of
memories, and the counts of a consolidation or decay run (with the progress callback long jobs report to)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field, PrivateAttr

from .base import Model
from .kinds import HistoryAction
from .record import MemoryRecord

# How a long job reports as it goes (consolidate, decay, build_graph): progress(phase, done, total);
# consolidate also calls it with (phase, 0, 0) as each of its phases starts (total 0: not known yet).
Progress = Callable[[str, int, int], None]


class SearchHit(Model):
    """A recalled memory and why it ranked where it did."""

    memory: MemoryRecord
    score: float = Field(description="final ranking score (higher is better)")
    similarity: float | None = Field(default=None, description="cosine similarity to the query, if dense search ran")
    signals: dict[str, float] = Field(default_factory=dict, description="why it ranked here: the ranks in dense and BM25 "
                                      "search and each stage's part of the score (similarity, bm25_norm, chat, neighbour, recency, ...)")

    @property
    def id(self) -> int:
        return self.memory.id

    @property
    def text(self) -> str:
        return self.memory.text


class SearchResult(Model):
    """Episodic, semantic and (when asked for) procedural hits, each list ranked best first."""

    episodic: list[SearchHit] = Field(default_factory=list)
    semantic: list[SearchHit] = Field(default_factory=list)
    procedural: list[SearchHit] = Field(default_factory=list)

    @property
    def all(self) -> list[SearchHit]:
        """Every list in one, each keeping its own order. Where they meet, the cosine (with the
        hubness stage's correction) decides: episodic scores carry context bonuses that other kinds
        cannot have, so scores are comparable only within a kind (by score where no cosine exists,
        as in BM25-only search)."""
        def key(h: SearchHit) -> float:
            return h.similarity + h.signals.get("hubness", 0.0) if h.similarity is not None else h.score

        lists = [self.episodic, self.semantic, self.procedural]
        heads = [0, 0, 0]
        out: list[SearchHit] = []
        while True:
            ready = [i for i in range(3) if heads[i] < len(lists[i])]
            if not ready:
                return out
            best = max(ready, key=lambda i: (key(lists[i][heads[i]]), -i))  # a tie goes to the earlier kind
            out.append(lists[best][heads[best]])
            heads[best] += 1

    def __len__(self) -> int:
        return len(self.episodic) + len(self.semantic) + len(self.procedural)


class UndoResult(Model):
    """What `Memory.undo` did: the memories that now hold the state from before the event (the same
    ids, or new ids where a deleted row came back) and those it removed (a merged record, a creation)."""

    event_id: int
    action: HistoryAction  # the action undone
    memory_ids: list[int] = Field(default_factory=list)
    removed_ids: list[int] = Field(default_factory=list)
    message: str = ""


class AddResult(Model):
    """What `Memory.add` did with a turn."""

    ids: list[int] = Field(default_factory=list)
    stored: bool = False
    reason: str = ""
    pending_decision: bool = False
    refused: list[str] = Field(default_factory=list)  # what the project's instructions forbade storing, and why


class ObserveResult(Model):
    """What `Memory.observe` (the KnowledgeMonitor) did after a turn: memory ids per action."""

    added: list[int] = Field(default_factory=list)
    updated: list[int] = Field(default_factory=list)
    boosted: list[int] = Field(default_factory=list)  # reinforced (within the cooldown and the daily cap)
    used: list[int] = Field(default_factory=list)  # the answer relied on them: hit_count + 1
    deleted: list[int] = Field(default_factory=list)  # soft: the row kept in a "forgotten" event (restore)
    refused: list[str] = Field(default_factory=list)  # what the model asked that was not done, and why
    llm_calls: int = 0
    pending_decision: bool = False  # the model failed: the turn was kept raw for a later decision
    reason: str = ""


class MemoryPage(Model):
    """One page of a user's memories, oldest event first; `next_offset` is None on the last page."""

    items: list[MemoryRecord] = Field(default_factory=list)
    total: int = 0
    offset: int = 0
    next_offset: int | None = None


class ConsolidationStats(Model):
    examined: int = 0
    merged: int = 0
    separated: int = 0  # memories a separation rewrote, each once per run (never more than the memories)
    separated_pairs: int = 0  # pairs told apart: one memory may be told apart from several neighbours
    semantic_created: int = 0
    pending_decided: int = 0
    llm_calls: int = 0
    similarity_lookups: int = 0
    candidate_pairs: int = 0  # pairs the similarity search proposed to the judges (merge or separate), before the rules
    errors: int = 0
    archived: int = 0  # by the decay step that ends a run (lifecycle/decay.py)
    forgotten: int = 0
    promoted: int = 0  # to core by the MemoryReviewer
    superseded: int = 0  # older facts a newer one made untrue (lifecycle/supersede.py)
    compressed: int = 0  # old facts archived into fewer facts or one pattern (lifecycle/compress.py)
    graph_read: int = 0  # memories read into the graph (graph: on; graph/build.py)
    seconds: float = 0.0
    _separated_ids: set[int] = PrivateAttr(default_factory=set)

    def count_separated(self, memory_ids: list[int]) -> None:
        """One more pair told apart, rewriting these memories: `separated` counts each memory once."""
        self.separated_pairs += 1
        self._separated_ids.update(memory_ids)
        self.separated = len(self._separated_ids)


class DecayStats(Model):
    """What one decay pass did (lifecycle/decay.py)."""

    examined: int = 0
    stamped: int = 0  # memories written before lifecycle that got its fields (their clock starts at this pass)
    archived: int = 0
    expired: int = 0  # todos archived because their date passed (also counted in archived)
    forgotten: int = 0
    promoted: int = 0  # to core: the MemoryReviewer said so (rules: names, birthdays, standing preferences)
    reviewed: int = 0  # MemoryReviewer calls
    seconds: float = 0.0
