"""Consolidation inside the service: manual runs (POST /v1/consolidate) and the cron schedule share
one lock, so two runs never overlap; every run is recorded (trigger, start, seconds, stats, error)."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any, Optional

from apscheduler.schedulers.background import BackgroundScheduler

from ..consolidation.schedule import DEFAULT_GRACE_S, cron_trigger, register_consolidation
from ..errors import HippocampusError
from ..memory import Memory
from ..models import ConsolidationStats
from .metrics import ServiceMetrics

log = logging.getLogger(__name__)
KEEP_RUNS = 20


class Consolidations:
    """Runs `Memory.consolidate` one at a time and remembers the last runs."""

    def __init__(self, memory: Memory, metrics: ServiceMetrics):
        self.memory = memory
        self.metrics = metrics
        self._lock = threading.Lock()
        self.runs: deque[dict[str, Any]] = deque(maxlen=KEEP_RUNS)
        self._scheduler: Optional[BackgroundScheduler] = None

    def run(self, user_ids: list[Optional[str]], trigger: str) -> ConsolidationStats:
        """Consolidate each of `user_ids` (None: every user) after any run in progress has finished."""
        with self._lock:
            started, total = time.time(), ConsolidationStats()
            record: dict[str, Any] = {"trigger": trigger, "started_at": round(started, 3), "users": user_ids}
            try:
                for user_id in user_ids:
                    stats = self.memory.consolidate(user_id=user_id)
                    for field, value in stats.model_dump().items():
                        setattr(total, field, getattr(total, field) + value)
            except HippocampusError as exc:
                record.update(outcome="failed", error=f"{type(exc).__name__}: {exc}", finished_at=round(time.time(), 3))
                self.runs.append(record)
                self.metrics.consolidations.labels(trigger, "failed").inc()
                raise
            finished = time.time()
            total.seconds = round(finished - started, 3)
            record.update(outcome="ok", finished_at=round(finished, 3), stats=total.model_dump())
            self.runs.append(record)
            self.metrics.consolidations.labels(trigger, "ok").inc()
            return total

    # the Consolidates protocol, for consolidation.schedule.register_consolidation
    def consolidate(self, user_id: Optional[str] = None, progress: Any = None) -> ConsolidationStats:
        return self.run([user_id], trigger="cron")

    @property
    def running(self) -> bool:
        return self._lock.locked()

    def schedule(self, cron: str, grace: int = DEFAULT_GRACE_S) -> None:
        """Consolidate on a crontab schedule in a background thread (missed runs collapse into one)."""
        cron_trigger(cron)  # InvalidInput now, not when the scheduler starts
        self._scheduler = BackgroundScheduler()
        register_consolidation(self._scheduler, self, cron, misfire_grace_time=grace)
        self._scheduler.start()
        log.info("consolidation scheduled on %r", cron)

    @property
    def scheduler(self) -> Optional[BackgroundScheduler]:
        """The running schedule, if `serve --consolidate-cron` asked for one."""
        return self._scheduler

    def next_run(self) -> Optional[str]:
        job = self._scheduler.get_job("hippocampus-consolidation") if self._scheduler else None
        return job.next_run_time.isoformat() if job and job.next_run_time else None

    def shutdown(self) -> None:
        """Stop the schedule; a run in progress finishes first."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
