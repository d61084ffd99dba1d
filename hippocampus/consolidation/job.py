"""The offline consolidation job, an orchestrator: one run is its episodic phases, in order, each a plain
class given what it needs by name (as the service's PHASES are functions):

1. finish any merge a crash interrupted (Merges.finish_interrupted, merges.py), so that a crash at any
   point loses nothing and a re-run converges without duplicates;
2. decide the turns kept pending (PendingDecisions, pending.py);
3. distil facts from episodes not yet distilled (Distiller, distill.py: before the merge pass, from their
   original wording; a merge of two distilled episodes stays distilled);
4. merge or separate similar episodes (PairPass, pairs.py: one batched similarity search per chunk with
   the records' own stored vectors, so the work grows with n x k, never n^2; each unordered pair once).

The job builds the processors (as MemoryContext.processor does), holds the one Writer every row goes
through, the write lock, the run's lease check (`fence`) and the crash tests' `checkpoint`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ..config import MemoryConfig
from ..context import MemoryContext
from ..embeddings import Embedder
from ..llm import ChatModel
from ..models import ConsolidationStats, MemoryType, Progress
from ..processors.base import build
from ..processors.merger import EpisodicMerger
from ..processors.semantic_writer import SemanticWriter
from ..processors.separator import EpisodicSeparator
from ..processors.write_decider import EpisodicWriteDecider
from ..store import MilvusStore
from ..store import filters as F
from ..store.writes import Writer
from .distill import Distiller
from .merges import Merges
from .pairs import PairPass
from .pending import PendingDecisions

EPISODIC = MemoryType.EPISODIC.value


def thresholds_for(config: MemoryConfig, model_name: str) -> tuple[float, float]:
    """(ambiguous_low, merge_high): explicit settings first, then the table for the embedder in use."""
    table = config.thresholds.get(model_name)
    if table is None:
        return config.merge_thresholds
    low = config.t_amb_low if config.t_amb_low is not None else table["ambiguous"]
    high = config.t_merge_high if config.t_merge_high is not None else table["merge"]
    return low, high


class ConsolidationJob:
    """One consolidation run over the store; uses the store, the embedder and the processors."""

    def __init__(
        self,
        store: MilvusStore,
        embedder: Embedder,
        llm: ChatModel,
        config: MemoryConfig,
        write_lock: threading.Lock | None = None,
        honour: Any = None,
        writes: Writer | None = None,
    ):
        """`writes`: the Writer every row goes through (the facade's, from_context; else one of the job's own).
        `honour` (memory/forget.py's Honour, handed in by name): what a pending turn says about the memory
        itself (a forget request, a correction) is honoured as add(infer=True) honours it; None: not at all."""
        self.store = store
        self.embedder = embedder
        self.config = config
        # built as MemoryContext.processor builds them: the project's categories and instructions reach the
        # nightly decision too (issue 40, case 6)
        self.merger, self.separator, self.extractor, self.decider = (
            build(P, llm, config) for P in (EpisodicMerger, EpisodicSeparator, SemanticWriter, EpisodicWriteDecider))
        self.thresholds = thresholds_for(config, embedder.model_name)
        self._lock: AbstractContextManager[Any] = write_lock if write_lock is not None else nullcontext()
        # the one write path (store/writes.py); the job holds the lock across its checks and calls its *_held methods
        self.writes = writes or Writer(store, embedder, write_lock or threading.Lock())
        self.honour = honour
        self.stats = ConsolidationStats()
        # the run's lease check (store/leases.py), before each destructive step: a replica that lost its
        # lease raises LeaseLost there and deletes nothing; the next holder finishes the work
        self.fence: Callable[[], None] = lambda: None
        # the crash-safe merge writes (merges.py); the fence and checkpoint read here, so replacing them counts
        self.merges = Merges(store, embedder, self.writes, self._lock, fence=lambda: self.fence(),
                             checkpoint=lambda name: self.checkpoint(name))

    @classmethod
    def from_context(cls, ctx: MemoryContext, honour: Any = None) -> ConsolidationJob:
        """The job over a facade's context: its store, embedder, chat model, settings and write lock."""
        return cls(ctx.store, ctx.embedder, ctx.llm, ctx.config, write_lock=ctx.write_lock, honour=honour, writes=ctx.writer)

    def checkpoint(self, name: str) -> None:
        """Called between the writes of one change; a no-op hook the crash tests pause at."""

    def run(self, user_id: str | None = None, progress: Progress | None = None) -> ConsolidationStats:
        """Every episodic phase, in order, over one user's episodes (all users when None)."""
        started = time.perf_counter()
        self.stats = ConsolidationStats()
        notify: Progress = progress or (lambda phase, done, total: None)
        scope = F.and_(F.eq("user_id", user_id) if user_id is not None else None, F.eq("memory_type", EPISODIC))
        self.merges.finish_interrupted(scope)
        self._pending().run(scope, notify)
        # Distil first, from the episodes' own words (a separation may add date tags to a text).
        Distiller(self.store, self.embedder, self.extractor, self.config.k_semantic, self._lock, self.stats, self.checkpoint,
                  fence=lambda: self.fence(), writes=self.writes).run(scope, notify)
        PairPass(self.store, self.embedder, self.merger, self.separator, self.thresholds, self.config, self._lock,
                 self.stats, self.writes, self.merges).run(scope, notify)
        self.stats.seconds = round(time.perf_counter() - started, 3)
        return self.stats

    def decide_pending(self, user_id: str | None = None, limit: int | None = None,
                       progress: Progress | None = None) -> ConsolidationStats:
        """The pending phase alone (Memory.decide_pending, for a background worker): at most `limit`
        pending turns of this user (all users when None) are decided; nothing is merged or distilled."""
        started = time.perf_counter()
        self.stats = ConsolidationStats()
        scope = F.and_(F.eq("user_id", user_id) if user_id is not None else None, F.eq("memory_type", EPISODIC))
        if limit is not None:
            rows = self.store.query(F.and_(scope, F.json_eq("metadata", "pending_decision", True)), ["id"], limit=limit) if limit else []
            scope = F.and_(scope, F.in_("id", [int(r["id"]) for r in rows]))
        self._pending().run(scope, progress or (lambda phase, done, total: None))
        self.stats.seconds = round(time.perf_counter() - started, 3)
        return self.stats

    def _pending(self) -> PendingDecisions:
        return PendingDecisions(self.store, self.embedder, self.writes, self._lock, self.decider, self.honour, self.stats,
                                fence=lambda: self.fence())
