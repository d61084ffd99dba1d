"""Consolidation inside the service: manual runs (POST /v1/consolidate), the cron schedule and the
decay step (its own schedule, and once at start when the last pass is over a day old) share one
lock, so two runs of this process never overlap; every run is recorded (trigger, start, seconds,
stats, error).

Across replicas (several `serve` on one Milvus server) the store's leases decide (store/leases.py):
each run holds the lease of its user (or of every user) while it works. A manual run waits for
another replica's run of the same user; a scheduled one (cron, decay, the pending worker) skips
and records "held by <replica>". The process-local lock stays as the fast path in front of them."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from apscheduler.schedulers.background import BackgroundScheduler

from ..consolidation.schedule import (
    DEFAULT_GRACE_S,
    ERROR_CHARS,
    add_stats,
    cron_trigger,
    each_user,
    register_consolidation,
    store_users,
)
from ..errors import HippocampusError
from ..memory import Memory
from ..models import ConsolidationStats, DecayStats
from ..store.leases import ALL, JOBS, LeaseHeld
from .logs import described
from .metrics import ServiceMetrics

log = logging.getLogger(__name__)
KEEP_RUNS = 20
PENDING_INTERVAL_S = 10.0  # how often the worker looks for turns left pending (deferred or a failed LLM)
PENDING_BATCH = 50
DECAY_STALE_S = 24 * 3600  # at start, decay when the last pass is older than a day
DECAY_JOB = "hippocampus-decay"
T = TypeVar("T")


def deployment_line(uri: str, collection: str | None = None) -> str:
    """What `serve` says at start: alone (a milvus-lite path: one process by its lock) or one of several
    replicas (a server URI: ids and background work coordinated by leases in the store)."""
    name = collection or "memories"
    if "://" not in uri:
        return (f"running alone: the milvus-lite store {uri} takes one process; for several replicas serve a "
                "Milvus server's URI (docs/scale.md)")
    return (f"running as one of several replicas on {uri} (collection {name!r}): ids from a worker number and "
            f"background work under leases kept in {name}_leases (docs/scale.md)")


class Consolidations:
    """Runs `Memory.consolidate` one at a time and remembers the last runs."""

    def __init__(self, memory: Memory, metrics: ServiceMetrics):
        self.memory = memory
        self.metrics = metrics
        self._lock = threading.Lock()
        self.runs: deque[dict[str, Any]] = deque(maxlen=KEEP_RUNS)
        self._scheduler: BackgroundScheduler | None = None
        self._worker: threading.Thread | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.pending_decided = 0
        self._starters: list[threading.Thread] = []
        self._tracked: dict[str, dict[str, Any]] = {}
        self._starting = threading.Lock()

    def run(self, user_ids: list[str | None], trigger: str, progress: Any = None) -> ConsolidationStats:
        """Consolidate each of `user_ids` (None: every user) after any run in progress has finished;
        `progress(phase, done, total)` as Memory.consolidate calls it. A scheduled run (trigger "cron")
        skips a user whose lease another replica holds (recorded in `skipped`); others wait for it.
        A run over every user that fails goes user by user (`each_user`): a user's failure is recorded
        in `failures` with the user and counted in `errors`, and the others are consolidated."""
        with self._lock:
            started, total = time.time(), ConsolidationStats()
            record: dict[str, Any] = {"trigger": trigger, "started_at": round(started, 3), "users": user_ids}
            wait = None if trigger != "cron" else 0.0
            failures: list[dict[str, str]] = []

            def one(user_id: str | None) -> ConsolidationStats:
                return self.memory.consolidate(user_id=user_id, progress=progress)  # re-enters the lease

            try:
                for user_id in user_ids:
                    try:
                        with self.leases.hold(JOBS, user_id if user_id is not None else ALL, "consolidate", wait_s=wait):
                            if user_id is None:
                                parts = each_user(one, lambda: store_users(self.memory.store), failures, "consolidation")
                            else:
                                parts = [one(user_id)]
                    except LeaseHeld as held:
                        if wait is not None:
                            record.setdefault("skipped", []).append(f"{user_id or 'every user'}: held by {held.holder}")
                            continue
                        raise
                    add_stats(parts, into=total)
            except Exception as exc:  # recorded, then the caller's (an API run answers it; cron logs it)
                record.update(outcome="failed", error=f"{type(exc).__name__}: {exc}"[:ERROR_CHARS],
                              finished_at=round(time.time(), 3))
                self.runs.append(record)
                self.metrics.consolidations.labels(trigger, "failed").inc()
                raise
            finished = time.time()
            total.seconds = round(finished - started, 3)
            total.errors += len(failures)
            outcome = "partial" if failures else "ok"
            record.update(outcome=outcome, finished_at=round(finished, 3), stats=total.model_dump())
            if failures:
                record["failures"] = failures
            self.runs.append(record)
            self.metrics.consolidations.labels(trigger, outcome).inc()
            return total

    def start(self, user_ids: list[str | None], trigger: str) -> str:
        """Consolidate in the background (the UI's "consolidate now"); `tracked(run_id)` tells how far
        it got: the phase and its done/total from the job's own progress callback, then the stats.
        While a run for the same users is unfinished its id is returned and no thread is started
        (1,500 posts were 1,500 threads, issue 42)."""
        with self._starting:  # one background run per set of users: a second click joins the running one
            for state in self._tracked.values():
                if state["users"] == user_ids and not state["finished"]:
                    return str(state["id"])
            run_id = uuid.uuid4().hex[:12]
            state = {"id": run_id, "users": user_ids, "phase": "waiting", "done": 0, "total": 0,
                     "finished": False, "stats": None, "error": None}
            self._tracked[run_id] = state
        while len(self._tracked) > KEEP_RUNS:
            self._tracked.pop(next(iter(self._tracked)))

        def progress(phase: str, done: int, total: int) -> None:
            state.update(phase=phase, done=done, total=total)

        def work() -> None:
            try:
                state["stats"] = self.run(user_ids, trigger, progress).model_dump()
            except HippocampusError as exc:
                state["error"] = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # a bug must not leave the page polling forever
                log.exception("tracked consolidation failed")
                state["error"] = f"{type(exc).__name__}: {exc}"
            finally:
                state.update(phase="finished", finished=True)

        thread = threading.Thread(target=work, name=f"consolidate-{run_id}", daemon=True)
        thread.start()
        self._starters = [t for t in self._starters if t.is_alive()] + [thread]  # shutdown waits for it
        return run_id

    def tracked(self, run_id: str) -> dict[str, Any] | None:
        """A background run's state (see `start`), or None for an unknown id."""
        state = self._tracked.get(run_id)
        return dict(state) if state is not None else None

    def decay(self, trigger: str) -> DecayStats | None:
        """One decay pass over every user (after any run in progress), recorded like a consolidation;
        a failure is logged and recorded, never raised (it runs from the scheduler or at start).
        Skipped (recorded so) while another replica holds a lease of background work."""
        with self._lock:
            started = time.time()
            record: dict[str, Any] = {"trigger": trigger, "step": "decay", "started_at": round(started, 3), "users": [None]}
            failures: list[dict[str, str]] = []
            try:
                with self.leases.hold(JOBS, ALL, "decay", wait_s=0.0):
                    parts = each_user(self.memory.decay, lambda: store_users(self.memory.store), failures, "decay")
                    stats = add_stats(parts, into=DecayStats())
            except LeaseHeld as held:
                record.update(outcome="skipped", error=f"held by {held.holder}", finished_at=round(time.time(), 3))
                self.runs.append(record)
                return None
            except Exception as exc:  # any failure: a scheduled pass must not end its thread with a traceback
                log.warning("decay (%s) failed: %s", trigger, type(exc).__name__)
                record.update(outcome="failed", error=f"{type(exc).__name__}: {exc}"[:ERROR_CHARS],
                              finished_at=round(time.time(), 3))
                self.runs.append(record)
                self.metrics.consolidations.labels(trigger, "failed").inc()
                return None
            outcome = "partial" if failures else "ok"
            record.update(outcome=outcome, finished_at=round(time.time(), 3), stats=stats.model_dump())
            if failures:
                record["failures"] = failures
            self.runs.append(record)
            self.metrics.consolidations.labels(trigger, outcome).inc()
            return stats

    def each_user(self, step: str, job: Callable[[str | None], T], user_id: str | None, trigger: str = "api") -> list[T]:
        """`job(user_id)` for a route (decay, graph build); for every user (None) through `each_user`,
        the run recorded in the history with each failed user (a user's damaged data stops no other)."""
        if user_id is not None:
            return [job(user_id)]
        failures: list[dict[str, str]] = []
        record: dict[str, Any] = {"trigger": trigger, "step": step, "started_at": round(time.time(), 3), "users": [None]}
        try:
            parts = each_user(job, lambda: store_users(self.memory.store), failures, step)
        except Exception as exc:
            record.update(outcome="failed", error=f"{type(exc).__name__}: {exc}"[:ERROR_CHARS], finished_at=round(time.time(), 3))
            self.runs.append(record)
            raise
        record.update(outcome="partial" if failures else "ok", finished_at=round(time.time(), 3))
        if failures:
            record["failures"] = failures
        self.runs.append(record)
        return parts

    def decay_if_stale(self, max_age_s: float = DECAY_STALE_S) -> threading.Thread:
        """In the background: decay now when the last pass over every user is older than `max_age_s`
        (or never ran), so a service that was down over its nightly run catches up at start."""

        def check() -> None:
            try:
                last = self.memory.last_decay()
            except HippocampusError as exc:
                log.warning("cannot tell when decay last ran: %s", exc)
                return
            if last is None or time.time() - last > max_age_s:
                self.decay("decay-start")

        thread = threading.Thread(target=check, name="decay-at-start", daemon=True)
        thread.start()
        self._starters.append(thread)
        return thread

    def schedule_decay(self, cron: str, grace: int = DEFAULT_GRACE_S) -> None:
        """The decay step on its own crontab schedule (consolidation runs it too)."""
        trigger = cron_trigger(cron)
        if self._scheduler is None:
            self._scheduler = BackgroundScheduler()
            self._scheduler.start()
        self._scheduler.add_job(self.decay, trigger, args=["decay-cron"], id=DECAY_JOB, max_instances=1, coalesce=True,
                                misfire_grace_time=grace, replace_existing=True)
        log.info("decay scheduled on %r", cron)

    # the Consolidates protocol, for consolidation.schedule.register_consolidation
    def consolidate(self, user_id: str | None = None, progress: Any = None) -> ConsolidationStats:
        return self.run([user_id], trigger="cron")

    @property
    def running(self) -> bool:
        return self._lock.locked()

    @property
    def leases(self) -> Any:
        """The store's lease table (store/leases.py): in memory for a local milvus-lite path."""
        return self.memory.store.leases

    def lease_holders(self) -> list[dict[str, Any]]:
        """Who holds which lease now (every replica's, read from the store), for `stats`; [] when unreadable."""
        try:
            return self.leases.holders()
        except HippocampusError as exc:
            log.debug("lease holders unreadable: %s", exc)
            return []

    def schedule(self, cron: str, grace: int = DEFAULT_GRACE_S) -> None:
        """Consolidate on a crontab schedule in a background thread (missed runs collapse into one)."""
        cron_trigger(cron)  # InvalidInput now, not when the scheduler starts
        if self._scheduler is None:
            self._scheduler = BackgroundScheduler()
            self._scheduler.start()
        register_consolidation(self._scheduler, self, cron, misfire_grace_time=grace)
        log.info("consolidation scheduled on %r", cron)

    @property
    def scheduler(self) -> BackgroundScheduler | None:
        """The running schedule, if `serve --consolidate-cron` asked for one."""
        return self._scheduler

    def next_run(self) -> str | None:
        job = self._scheduler.get_job("hippocampus-consolidation") if self._scheduler else None
        return job.next_run_time.isoformat() if job and job.next_run_time else None

    # ------------------------------------------------------------------ deferred write decisions
    def start_pending_worker(self, interval_s: float = PENDING_INTERVAL_S) -> None:
        """Decide turns kept pending (`write_decision: deferred`) in the background, off the chat path:
        after a nudge from add, or every `interval_s`. It shares the consolidation lock, so a turn is
        never decided twice at once; while consolidation runs it waits (consolidation decides them too)."""
        self._worker = threading.Thread(target=self._decide_loop, args=(interval_s,), name="pending-decisions", daemon=True)
        self._worker.start()

    def nudge(self) -> None:
        """A turn was just stored pending: decide it soon."""
        self._wake.set()

    def _decide_loop(self, interval_s: float) -> None:
        while not self._stop.is_set():
            self._wake.wait(interval_s)
            self._wake.clear()
            if self._stop.is_set() or not self._lock.acquire(timeout=0.1):
                continue
            try:
                with self.leases.hold(JOBS, ALL, "pending", wait_s=0.0):  # another replica deciding: its turn
                    while not self._stop.is_set():  # a batch at a time, until none is left
                        decided = self.memory.decide_pending(limit=PENDING_BATCH)
                        self.pending_decided += decided
                        if decided < PENDING_BATCH:
                            break
            except LeaseHeld:
                pass
            except Exception as exc:  # a failed decision stays pending for the next round; the worker lives on
                log.warning("deciding pending turns failed (%s); they stay pending", described(exc))
            finally:
                self._lock.release()

    def shutdown(self) -> None:
        """Stop the schedule and the worker; a run (a UI's too) or a batch in progress finishes first."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
        for thread in self._starters:
            thread.join(timeout=300)
        if self._worker is not None:
            self._stop.set()
            self._wake.set()
            self._worker.join(timeout=300)
            self._worker = None
