"""Run consolidation on a cron schedule with APScheduler 3.x.

`register_consolidation` adds the job to an application's own scheduler;
`run_forever` is what `hippocampus schedule --cron ...` runs. Runs never overlap
(max_instances=1) and runs missed while the process was down or busy collapse
into one (coalesce=True), started if no later than `misfire_grace_time` seconds.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Callable, Protocol, Union

from apscheduler.job import Job
from apscheduler.schedulers.base import STATE_STOPPED, BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger

from ..defaults import DEFAULT_CRON, DEFAULT_GRACE_S
from ..errors import InvalidInput
from ..models import ConsolidationStats

log = logging.getLogger(__name__)
JOB_ID = "hippocampus-consolidation"


class Consolidates(Protocol):
    def consolidate(self, user_id: str | None = None, progress: Any = None) -> ConsolidationStats: ...


class ClosableConsolidates(Consolidates, Protocol):
    def close(self) -> None: ...


MemoryOrFactory = Union[Consolidates, Callable[[], ClosableConsolidates]]


def cron_trigger(cron: str, timezone: Any = None) -> CronTrigger:
    """A 5-field crontab expression ("min hour day month weekday") as a trigger; InvalidInput if malformed."""
    if not isinstance(cron, str) or not cron.strip():
        raise InvalidInput("cron must be a crontab expression such as '0 3 * * *'")
    try:
        return CronTrigger.from_crontab(cron.strip(), timezone=timezone)
    except ValueError as exc:
        raise InvalidInput(f"invalid cron expression {cron!r}: {exc}") from exc


Report = Callable[[str], None]


def _now() -> str:
    return datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def stats_line(stats: ConsolidationStats) -> str:
    """The counts of one run on one line, e.g. "examined 12, merged 1, ..., errors 0 in 0.4 s"."""
    counts = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in stats.model_dump().items() if key != "seconds")
    return f"{counts} in {stats.seconds:.1f} s"


def run_consolidation(memory_or_factory: MemoryOrFactory, user_id: str | None = None,
                      report: Report | None = None) -> ConsolidationStats:
    """One run. A factory is called for a fresh Memory that is closed afterwards (it releases the store).
    `report(line)`, when given, gets one line when the run starts and one when it ends (with the
    counts) or fails; a failure is re-raised after its line."""
    scope = f"user {user_id!r}" if user_id is not None else "all users"
    if report is not None:
        report(f"{_now()} consolidation started ({scope})")
    try:
        if hasattr(memory_or_factory, "consolidate"):
            stats = memory_or_factory.consolidate(user_id=user_id)  # type: ignore[union-attr]
        else:
            memory = memory_or_factory()  # type: ignore[operator]
            try:
                stats = memory.consolidate(user_id=user_id)
            finally:
                memory.close()
    except Exception as exc:
        if report is not None:
            report(f"{_now()} consolidation failed ({scope}): {type(exc).__name__}: {exc}")
        raise
    log.info("consolidation finished: %s", stats.model_dump())
    if report is not None:
        report(f"{_now()} consolidation finished ({scope}): {stats_line(stats)}")
    return stats


def register_consolidation(
    scheduler: BaseScheduler,
    memory_or_factory: MemoryOrFactory,
    cron: str = DEFAULT_CRON,
    *,
    user_id: str | None = None,
    job_id: str = JOB_ID,
    misfire_grace_time: int = DEFAULT_GRACE_S,
    timezone: Any = None,
    report: Report | None = None,
) -> Job:
    """Add the consolidation job to an application's scheduler (replacing one with the same id);
    `report` gets a line per run (see run_consolidation). Raises InvalidInput for a malformed cron
    expression or something that is neither a Memory nor a factory."""
    if not (hasattr(memory_or_factory, "consolidate") or callable(memory_or_factory)):
        raise InvalidInput("pass a Memory or a callable that returns one")
    trigger = cron_trigger(cron, timezone)
    if scheduler.state == STATE_STOPPED and scheduler.get_job(job_id) is not None:
        scheduler.remove_job(job_id)  # replace_existing only applies once a scheduler runs
    return scheduler.add_job(
        run_consolidation,
        trigger=trigger,
        args=[memory_or_factory, user_id, report],
        id=job_id,
        name="hippocampus consolidation",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=misfire_grace_time,
        replace_existing=True,
    )


def run_forever(memory_factory: Callable[[], ClosableConsolidates], cron: str = DEFAULT_CRON, *, user_id: str | None = None,
                misfire_grace_time: int = DEFAULT_GRACE_S, timezone: Any = None, report: Report | None = None) -> None:
    """Block and consolidate on schedule; each run opens its own Memory so the store is free in between.
    `report` gets a line when each run starts and ends (see run_consolidation)."""
    scheduler = BlockingScheduler(timezone=timezone) if timezone is not None else BlockingScheduler()
    register_consolidation(scheduler, memory_factory, cron, user_id=user_id, misfire_grace_time=misfire_grace_time,
                           timezone=timezone, report=report)
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        scheduler.shutdown(wait=False)
