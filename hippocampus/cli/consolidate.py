"""`hippocampus consolidate` (one run, progress bar, stats table or --json) and
`hippocampus schedule --cron "0 3 * * *"` (a blocking APScheduler loop)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..contract.defaults import DEFAULT_CRON, DEFAULT_GRACE_S
from . import render
from .base import app, open_memory

PHASES = {"pending": "pending decisions", "semantic": "distilling facts", "pairs": "merging / separating"}


def _offline(memory: Any) -> bool:
    """Whether the run decided by the offline rules (no LLM was called); a Client cannot tell: False."""
    return getattr(getattr(memory, "config", None), "llm_provider", None) == "offline"


def stats_table(stats: BaseModel, title: str = "consolidation", offline: bool = False) -> Table:
    """A run's statistics; offline, `llm_calls` counts the rules' decisions and says so."""
    table = Table(title=title)
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in stats.model_dump().items():
        name = "rule decisions (offline, no LLM)" if offline and key == "llm_calls" else key.replace("_", " ")
        table.add_row(name, f"{value:.2f}" if isinstance(value, float) else str(value))
    return table


class GiveWay(Exception):
    """Raised between two steps of a run in this process when a service starting for its store waits for
    it (issue 57: a restarted `serve` exited while cron's consolidate held the store, and every chat-hook
    turn was refused until the run ended). Consolidation is crash-safe at every step (docs/architecture.md),
    so stopping between two steps loses nothing; the rest of the run is done by the service."""

    CHECK_EVERY_S = 1.0  # the records are files: read at most this often

    def __init__(self, pid: int):
        super().__init__(f"a service (pid {pid}) is starting for this store")
        self.pid = pid

    @classmethod
    def watch(cls, memory: Any) -> Callable[[], None]:
        """For a Memory in this process, a check that raises GiveWay once a service is starting for its
        store; for a Client (the run is already the service's), a no-op."""
        config = getattr(memory, "config", None)
        if config is None or not hasattr(memory, "store"):
            return lambda: None
        from .registry import service_starting

        uri, last = config.milvus_uri, [time.monotonic()]

        def check() -> None:
            if time.monotonic() - last[0] < cls.CHECK_EVERY_S:
                return
            last[0] = time.monotonic()
            record = service_starting(uri)
            if record is not None:
                raise cls(record.pid)

        return check


class GivingWay:
    """What `consolidate` and each run of `schedule` consolidate with: the Memory (or Client) `open_()` gives,
    whose run stops at the next step or phase (GiveWay) once a service is starting for its store. Then the
    store is closed and the rest of the run goes to that service (`open_()` again: cli/base.py waits for it),
    or runs here again when none answers. Other attributes are the current Memory's (or Client's)."""

    def __init__(self, open_: Callable[[], Any]):
        self._open = open_
        self.memory = open_()

    def consolidate(self, user_id: str | None = None, progress: Callable[[str, int, int], None] | None = None) -> Any:
        """One run, handed on once (see the class) when a service starts meanwhile; its stats."""
        give_way = GiveWay.watch(self.memory)

        def checked(phase: str, done: int, total: int) -> None:
            give_way()
            if progress is not None:
                progress(phase, done, total)

        try:
            return self.memory.consolidate(user_id=user_id, progress=checked)
        except GiveWay as way:  # the store is closed: the service takes it, and the rest of the run with it
            typer.echo(f"note: a service is starting for this store (pid {way.pid}); the rest of the run goes to it", err=True)
            self.memory.close()
            self.memory = self._open()
            return self.memory.consolidate(user_id=user_id)

    def __getattr__(self, name: str) -> Any:  # config, store: the current Memory's
        if name == "memory":  # not set yet: never a lookup on itself
            raise AttributeError(name)
        return getattr(self.memory, name)

    def close(self) -> None:
        self.memory.close()

    def __enter__(self) -> GivingWay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@app.command("consolidate")
def consolidate_cmd(
    user: str | None = typer.Option(None, "--user", "-u", help="only this user's memories (default: everyone)"),
    as_json: bool = typer.Option(False, "--json", help="print the statistics as JSON"),
) -> None:
    """Run consolidation once: retry pending decisions, distil facts, merge or separate similar episodes."""
    console, bars = Console(), Console(stderr=True)
    with GivingWay(open_memory) as memory:
        with Progress(TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=bars, transient=as_json, disable=not bars.is_terminal) as bar:  # a bar only on a terminal
            tasks: dict[str, int] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks and not total:  # a phase starting (consolidation/service.py): no bar yet
                    return
                if phase not in tasks:
                    tasks[phase] = bar.add_task(PHASES.get(phase, phase), total=total)
                bar.update(tasks[phase], completed=done, total=total)

            stats = memory.consolidate(user_id=user, progress=progress)
    if as_json:
        typer.echo(json.dumps(stats.model_dump()))
    else:
        console.print(stats_table(stats, offline=_offline(memory)))


@app.command("schedule")
def schedule_cmd(
    cron: str = typer.Option(DEFAULT_CRON, "--cron", help='crontab expression, e.g. "0 3 * * *" (03:00 every day)'),
    user: str | None = typer.Option(None, "--user", "-u", help="only this user's memories"),
    grace: int = typer.Option(DEFAULT_GRACE_S, "--misfire-grace", help="seconds a missed run may start late"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line when scheduled and one per run (its stats or its error)"),
) -> None:
    """Consolidate on a cron schedule until interrupted; runs never overlap, missed runs collapse into one.
    Prints a line when each run starts and one when it ends, with its counts."""
    from ..consolidation.schedule import cron_trigger, run_forever

    trigger = cron_trigger(cron)  # InvalidInput for a malformed expression (exit code 2)
    upcoming = trigger.get_next_fire_time(None, datetime.now(timezone.utc).astimezone())
    if as_json:
        typer.echo(json.dumps({"event": "scheduled", "cron": cron, "user_id": user, "next_run": upcoming.isoformat()}))
        run_forever(lambda: JsonRuns(GivingWay(open_memory)), cron, user_id=user, misfire_grace_time=grace)
        return
    Console().print(render.literal(f"consolidating on {cron!r}; next run {upcoming:%Y-%m-%d %H:%M %Z}. Ctrl-C stops."))
    run_forever(scheduled_run, cron, user_id=user, misfire_grace_time=grace, report=report_line)


def scheduled_run() -> GivingWay:
    """What each run of `schedule` consolidates with: a fresh Memory (or Client), giving way to a service
    that starts for its store meanwhile, as `consolidate` does (issue 57)."""
    return GivingWay(open_memory)


class JsonRuns:
    """`schedule --json`: the Memory (or Client) of one run, printing one JSON line when it ends:
    {"event": "finished", "stats": {...}} or {"event": "failed", "error": "..."}."""

    def __init__(self, memory: Any):
        self.memory = memory

    def consolidate(self, user_id: str | None = None) -> Any:
        started = datetime.now(timezone.utc).isoformat()
        try:
            stats = self.memory.consolidate(user_id=user_id)
        except Exception as exc:
            typer.echo(json.dumps({"event": "failed", "user_id": user_id, "started_at": started,
                                   "error": f"{type(exc).__name__}: {exc}"}, ensure_ascii=False))
            raise
        typer.echo(json.dumps({"event": "finished", "user_id": user_id, "started_at": started, "stats": stats.model_dump()}))
        return stats

    def close(self) -> None:
        self.memory.close()


def report_line(line: str) -> None:
    """What `hippocampus schedule` prints for each run: a line when it starts, one when it ends (with the counts)."""
    typer.echo(line)
