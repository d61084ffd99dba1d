"""Run consolidation on a cron schedule with APScheduler 3.x.

`register_consolidation` adds the job to an application's own scheduler;
`run_forever` is what `hippocampus schedule --cron ...` runs. Runs never overlap
(max_instances=1) and runs missed while the process was down or busy collapse
into one (coalesce=True), started if no later than `misfire_grace_time` seconds.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, TypeVar

from apscheduler.job import Job
from apscheduler.schedulers.base import STATE_STOPPED, BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger

from ..contract.defaults import DEFAULT_CRON, DEFAULT_GRACE_S
from ..errors import InvalidInput
from ..models import ConsolidationStats

log = logging.getLogger(__name__)
JOB_ID = "hippocampus-consolidation"
T = TypeVar("T")
ERROR_CHARS = 300  # of one user's failure in a run's record: its kind and the start of its message


def user_tag(user_id: str) -> str:
    """A user named in a log line without naming them: a short hash, the same for the same user."""
    return "u:" + hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def store_users(store: Any) -> list[str]:
    """Every user with a memory in the store, read in pages of ids and user ids."""
    users: set[str] = set()
    for page in store.iterate("id >= 0", ["id", "user_id"]):
        users.update(str(r["user_id"]) for r in page)
    return sorted(users)


def each_user(job: Callable[[str | None], T], users: Callable[[], list[str]], failures: list[dict[str, str]],
              what: str = "job") -> list[T]:
    """A store-wide job that one user's damaged data cannot stop: `job(None)` over every user at once;
    when that fails, `job(user)` for each of `users()`, a user's failure appended to `failures` as
    {"user", "error"} (for the run's record) and logged with the user hashed, the others going on.
    The first failure is raised again when the users cannot be listed or every user failed."""
    try:
        return [job(None)]
    except Exception as exc:
        first = exc
        log.warning("%s over every user failed (%s); running it user by user", what, type(exc).__name__)
    try:
        everyone = users()
    except Exception:
        raise first from None
    out: list[T] = []
    for user in everyone:
        try:
            out.append(job(user))
        except Exception as exc:  # recorded with the user; the other users' runs go on
            failures.append({"user": user, "error": f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]})
            log.warning("%s failed for user %s: %s", what, user_tag(user), type(exc).__name__)
    if everyone and not out:
        raise first
    return out


class Consolidates(Protocol):
    def consolidate(self, user_id: str | None = None, progress: Any = None) -> ConsolidationStats: ...


class ClosableConsolidates(Consolidates, Protocol):
    def close(self) -> None: ...


MemoryOrFactory = Consolidates | Callable[[], ClosableConsolidates]


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
    failures: list[dict[str, str]] = []
    try:
        if hasattr(memory_or_factory, "consolidate"):
            stats = _consolidate(memory_or_factory, user_id, failures)  # type: ignore[arg-type]
        else:
            memory = memory_or_factory()  # type: ignore[operator]
            try:
                stats = _consolidate(memory, user_id, failures)
            finally:
                memory.close()
    except Exception as exc:
        if report is not None:
            report(f"{_now()} consolidation failed ({scope}): {type(exc).__name__}: {exc}")
        raise
    for failure in failures:
        if report is not None:
            report(f"{_now()} consolidation failed for user {failure['user']!r}: {failure['error']}")
    log.info("consolidation finished: %s", stats.model_dump())
    if report is not None:
        report(f"{_now()} consolidation finished ({scope}): {stats_line(stats)}")
    return stats


def _consolidate(memory: Consolidates, user_id: str | None, failures: list[dict[str, str]]) -> ConsolidationStats:
    """One user, or every user user by user when the store-wide run fails (`each_user`); a user's
    failure counts in `errors`. A memory that manages its own runs (the service's) is called as is."""
    if user_id is not None or not hasattr(memory, "store"):
        return memory.consolidate(user_id=user_id)
    parts = each_user(lambda u: memory.consolidate(user_id=u), lambda: store_users(memory.store),  # type: ignore[attr-defined]
                      failures, "consolidation")
    return add_stats(parts, errors=len(failures))


def add_stats(parts: list[Any], errors: int = 0, into: Any = None) -> Any:
    """The field-by-field sum of several runs' stats (ConsolidationStats, DecayStats, GraphStats), plus
    `errors` users that failed where the stats have an `errors` count."""
    total = into if into is not None else (type(parts[0])() if parts else ConsolidationStats())
    for part in parts:
        for field, value in part.model_dump().items():
            setattr(total, field, getattr(total, field) + value)
    if errors and hasattr(total, "errors"):
        total.errors += errors
    return total


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
