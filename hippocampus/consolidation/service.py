"""The consolidation service: one run is the phases of `PHASES`, in order, as retrieval's `STAGES` are.

The episodic phases (recover interrupted merges, pending decisions, distillation, merge and
separate) are the ConsolidationJob's (job.py runs them: merges.py, pending.py, distill.py, pairs.py);
then the lifecycle's (supersede, compress, decay: lifecycle/) and the graph's (graph/). The facade
delegates `consolidate` and `decide_pending` here.

Each phase declares beside it (`@declares`, collected in `PHASE_SETTINGS`, as retrieval's stages do) the
MemoryConfig fields it reads itself and when it runs; `consolidate` reads the switch from there. What the
job (job.py) and lifecycle/ read of the config is theirs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .. import validation as V
from ..context import MemoryContext
from ..contract.requests import DecidePendingRequest
from ..graph.build import GraphStats
from ..lifecycle.compress import run_compress
from ..lifecycle.policy import decay_table
from ..lifecycle.supersede import run_supersede
from ..models import ConsolidationStats, DecayStats, now_ts
from ..processors.compressor import FactCompressor
from ..processors.contradiction import ContradictionJudge
from ..store.leases import ALL, JOBS, Lease
from .job import ConsolidationJob


class Decayer(Protocol):
    def decay(self, user_id: str | None = None, now: int | None = None, progress: Any = None) -> DecayStats: ...


class GraphBuilder(Protocol):
    def build_graph(self, user_id: str | None = None, progress: Any = None) -> GraphStats: ...


@dataclass
class Run:
    """One consolidation run as its phases see it: what it works on and the stats it fills."""

    ctx: MemoryContext
    decayer: Decayer
    graph: GraphBuilder
    user_id: str | None
    progress: Any
    stats: ConsolidationStats
    honour: Any = None  # memory/forget.py's Honour: forget requests and corrections in pending turns
    lease: Lease | None = None  # held for the whole run (store/leases.py); its check fences each destructive step


@dataclass(frozen=True)
class PhaseSettings:
    """What a phase owns: the MemoryConfig fields it reads itself (`settings`) and when it runs (`runs`,
    from the config; a phase that is off is not called)."""

    settings: tuple[str, ...] = ()
    runs: Callable[[Any], bool] = lambda config: True


Phase = Callable[[Run], None]
PHASE_SETTINGS: dict[str, PhaseSettings] = {}  # phase name -> its settings, filled by `declares`


def declares(settings: PhaseSettings) -> Callable[[Phase], Phase]:
    """Record a phase's settings under its name (the phase itself is returned unchanged)."""
    def record(phase: Phase) -> Phase:
        PHASE_SETTINGS[phase.__name__] = settings
        return phase
    return record


@declares(PhaseSettings())  # the job reads its own (merge thresholds and windows, k_semantic, write_decision, ...)
def episodes(run: Run) -> None:
    """The job's phases: finish interrupted merges, decide pending turns, distil, merge and separate."""
    job = ConsolidationJob.from_context(run.ctx, run.honour)
    if run.lease is not None:
        job.fence = run.lease.check
    run.stats = job.run(run.user_id, run.progress)


def _fence(run: Run) -> Callable[[], None] | None:
    """The run's lease check (store/leases.py), before each write of the lifecycle phases."""
    return run.lease.check if run.lease is not None else None


@declares(PhaseSettings(settings=("decay_preset", "categories")))  # the decay table judges a superseded fact's score
def supersede(run: Run) -> None:
    """Older facts that newer ones contradict marked superseded (newest wins)."""
    ctx, stats = run.ctx, run.stats
    sup = run_supersede(ctx.store, ctx.write_lock, lambda: ctx.processor(ContradictionJudge), run.user_id, now_ts(),
                        decay_table(ctx.config.decay_preset, ctx.config.categories), fence=_fence(run))
    stats.superseded, stats.llm_calls, stats.errors = sup.superseded, stats.llm_calls + sup.llm_calls, stats.errors + sup.errors


@declares(PhaseSettings(settings=("decay_preset",), runs=lambda config: config.decay_preset != "off"))
def compress(run: Run) -> None:
    """Facts over 30 / 90 days old compressed (not with decay_preset off)."""
    ctx, stats = run.ctx, run.stats
    comp = run_compress(ctx.store, ctx.embedder, ctx.write_lock, lambda: ctx.processor(FactCompressor), run.user_id, now_ts(),
                        fence=_fence(run))
    stats.compressed, stats.llm_calls, stats.errors = comp.compressed, stats.llm_calls + comp.llm_calls, stats.errors + comp.errors


@declares(PhaseSettings(settings=("decay_preset",), runs=lambda config: config.decay_preset != "off"))
def decay(run: Run) -> None:
    """Archive, forget and promote by score (not with decay_preset off)."""
    aged = run.decayer.decay(run.user_id, progress=run.progress)
    run.stats.archived, run.stats.forgotten, run.stats.promoted = aged.archived, aged.forgotten, aged.promoted


@declares(PhaseSettings(settings=("graph",), runs=lambda config: config.graph == "on"))
def graph(run: Run) -> None:
    """With `graph: on`, new memories read into the graph: last, it reads what the others left."""
    built = run.graph.build_graph(run.user_id, progress=run.progress)
    stats = run.stats
    stats.graph_read, stats.llm_calls, stats.errors = built.memories_read, stats.llm_calls + built.llm_calls, stats.errors + built.errors


PHASES: tuple[Phase, ...] = (episodes, supersede, compress, decay, graph)


class ConsolidationService:
    """consolidate and decide_pending over a MemoryContext; the lifecycle service decays and the
    graph service builds, each handed in by name."""

    def __init__(self, ctx: MemoryContext, decayer: Decayer, graph: GraphBuilder, honour: Any = None):
        self.ctx = ctx
        self.decayer = decayer
        self.graph = graph
        self.honour = honour  # what a pending turn says about the memory itself (memory/forget.py's Honour)

    def consolidate(self, user_id: str | None = None, progress: Any = None) -> ConsolidationStats:
        """Every phase of PHASES, in order, for one user or (None) all. `progress(phase, done, total)` gets
        (name, 0, 0) as each phase starts (every phase stops cleanly between two: an exception raised
        there ends the run with nothing half done), then what the phase itself reports."""
        user_id = V.check_id("user_id", user_id) if user_id is not None else None
        # one replica at a time for this user (or every user): a second waits; a caller that would rather
        # skip (the service's cron) takes the lease first, without waiting, and this re-enters it
        with self.ctx.store.leases.hold(JOBS, user_id if user_id is not None else ALL, "consolidate", wait_s=None) as lease:
            run = Run(self.ctx, self.decayer, self.graph, user_id, progress, ConsolidationStats(), self.honour, lease)
            for phase in PHASES:
                if PHASE_SETTINGS[phase.__name__].runs(self.ctx.config):
                    if progress is not None:  # each phase's start, (name, 0, 0): a caller may stop the run here (cli's GiveWay)
                        progress(phase.__name__, 0, 0)
                    phase(run)
        return run.stats

    def decide_pending(self, req: DecidePendingRequest) -> int:
        """The pending phase alone, at most `limit` turns; how many were decided. DecidePendingRequest
        (contract/requests.py) documents the fields and errors."""
        user_id = V.check_id("user_id", req.user_id) if req.user_id is not None else None
        limit = V.check_limit(req.limit) if req.limit is not None else None
        with self.ctx.store.leases.hold(JOBS, user_id if user_id is not None else ALL, "pending", wait_s=None) as lease:
            job = ConsolidationJob.from_context(self.ctx, self.honour)
            job.fence = lease.check
            return job.decide_pending(user_id, limit).pending_decided
