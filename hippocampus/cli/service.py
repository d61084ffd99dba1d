"""Which service holds which store: `hippocampus serve` records itself (URL, pid, store) in
HIPPOCAMPUS_HOME/services/<pid>.json while it runs, so that a service that `connect()` started in the
background can be found, used (`--server URL`) and stopped (`hippocampus service stop`).

A record is written before the store opens and removed when the service ends (its return, Ctrl-C or
SIGTERM). A record counts while its service proves, at /healthz, that it holds the record's secret
(registry.proves): a service killed with SIGKILL, stuck, or replaced on its port by another process leaves
a stale record, which `service status` shows and `service stop` (or a command on its store) removes without
signalling anyone (its pid may be another program's now). A young record whose process runs is a service starting.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..errors import ConfigError, StoreError
from . import render
from .base import JsonOpt, WideOpt, _App, app, emit, store_overrides
from .registry import ServiceRecord, alive, records, register, services_dir, state, store_key, unregister

STOP_WAIT_S = 45.0  # the service finishes its requests (uvicorn allows 30 s) and closes the store
STACK_BELOW = 20  # the store column's least room (cells) for `service status` to print a table


def configured_store(uri: str | None = None) -> str:
    """`uri`, else the global --uri, else the settings' milvus_uri (the store is not opened)."""
    from ..config import MemoryConfig

    overrides = {**store_overrides(), **({"milvus_uri": uri} if uri else {})}
    try:
        return store_key(MemoryConfig(**{**overrides, "create_store_dir": True}).milvus_uri)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None


def serving(host: str, port: int, store: str, collection: str | None, run: Callable[[str], None]) -> None:
    """Run `run(secret)` (the service, proving the record's secret at /healthz) recorded: the record goes
    when it returns, raises, or SIGTERM ends it (uvicorn re-raises SIGTERM after its graceful shutdown; the
    handler here removes the record first)."""
    record = register(host, port, store, collection)
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        unregister(record.pid)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)  # the exit status a SIGTERM gives, as before

    try:
        signal.signal(signal.SIGTERM, on_term)
        in_main = True
    except ValueError:  # not the main thread: the record still goes on return
        in_main = False
    try:
        run(record.secret or "")
    finally:
        unregister(record.pid)
        if in_main:
            signal.signal(signal.SIGTERM, previous)


# ---------------------------------------------------------------------- `hippocampus service ...`
service_app = _App(name="service", help="The services `hippocampus serve` (or connect()) started on this machine.",
                   no_args_is_help=True, rich_markup_mode=None)
app.add_typer(service_app, name="service")


def _row(record: ServiceRecord) -> dict[str, Any]:
    """A record as `status` shows it: never its secret; `state` running, starting or stale (alive: not stale)."""
    now = state(record)
    return {**record.model_dump(exclude={"secret"}), "state": now, "alive": now != "stale"}


@service_app.command("status")
def status_cmd(as_json: bool = JsonOpt, wide: bool = WideOpt) -> None:
    """List the recorded services: URL, pid, store, and whether each is running (it answers as the service
    that wrote the record), starting, or stale (`service stop` removes its record). A long store path is
    folded in its middle to fit the terminal (its file name stays); --wide or --json for it whole."""
    rows = [_row(r) for r in records()]
    width = render.UNLIMITED if wide else render.terminal_width()
    cells = [{"url": row["url"], "pid": str(row["pid"]), "state": row["state"], "store": row["store"],
              "since": row["started_at"].replace("T", " ")[:16]} for row in rows]
    names = ["url", "pid", "state", "store", "since"]
    fixed = {n: max([len(n)] + [render.cell_len(c[n]) for c in cells]) + 3 for n in names if n != "store"}
    room = width - sum(fixed.values()) - 4
    if room < 40:  # a narrow terminal: the store path matters more than when it started (--wide, --json)
        names.remove("since")
        room += fixed["since"]
    if room < STACK_BELOW:  # too narrow for columns at all: each service as labelled lines, nothing cut
        emit(as_json, rows, _stacked(cells, width) if rows else None, None if rows else "no service recorded")
        return
    table = Table(title=render.literal(f"services recorded in {render.fold_middle(str(services_dir()), max(16, width - 22))}"))
    for name in names:
        table.add_column(name, no_wrap=True)
    for c in cells:
        table.add_row(*(render.literal(render.fold_middle(c[n], max(16, room)) if n == "store" else c[n]) for n in names))
    emit(as_json, rows, table if rows else None, None if rows else "no service recorded", wide=wide)


def _stacked(cells: list[dict[str, str]], width: int) -> Group:
    """The services one under another, a field a line (`url  http://...`), each value folded in its
    middle to the terminal: at 40 columns the table's columns were cut to "http://127.0.0.…" and "…"."""
    title = render.literal(f"services recorded in {render.fold_middle(str(services_dir()), max(16, width - 21))}")
    parts: list[Any] = [title]
    for c in cells:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True)
        for name in ("url", "pid", "state", "store", "since"):
            grid.add_row(name, render.literal(render.fold_middle(c[name], max(16, width - 7))))
        parts += [Text(""), grid]
    return Group(*parts)


@service_app.command("stop")
def stop_cmd(
    uri: str | None = typer.Option(None, "--uri", help="the store whose service to stop (default: the global --uri, "
                                      "else the configured store)"),
    every: bool = typer.Option(False, "--all", help="stop every recorded service"),
    wait: float = typer.Option(STOP_WAIT_S, "--wait", help="seconds to wait for each to finish and close its store"),
    as_json: bool = JsonOpt,
) -> None:
    """Stop the service holding a store (SIGTERM: requests in flight finish, the store is closed)."""
    store = None if every else configured_store(uri)
    chosen = [r for r in records() if every or r.store == store]
    stopped, stale, stuck = [], [], []
    for record in chosen:
        now = _proved_within(record, wait)
        if now == "stale":  # it does not answer as the service that wrote the record: nobody is signalled
            stale.append(record.pid)
        elif now == "running" and _terminate(record.pid, wait):
            stopped.append(record.pid)
        else:  # still starting after `wait`, or proved but not ending
            stuck.append(record.pid)
            continue
        unregister(record.pid)
    out = {"store": store, "stopped": stopped, "stale_records_removed": stale, "still_running": stuck}
    if stuck:
        raise StoreError(f"the service (pid {', '.join(map(str, stuck))}) is still running (or still starting) after {wait:.0f} s; "
                               "`kill -9` it if it must go now")
    if not stopped and not stale:
        where = "any store" if every else store
        live = sum(1 for r in records() if state(r) != "stale")
        emit(as_json, out, message=f"no recorded service holds {where}"
             + (f" ({live} other(s) running: `hippocampus service status`)" if live else ""))
        return
    words = [f"stopped pid {pid}" for pid in stopped] + ([f"removed {len(stale)} dead record(s)"] if stale else [])
    emit(as_json, out, message="; ".join(words))


def _proved_within(record: ServiceRecord, wait: float) -> str:
    """The record's state, a starting service given up to `wait` seconds to answer (its store opening)."""
    deadline = time.monotonic() + max(wait, 0.0)
    now = state(record)
    while now == "starting" and time.monotonic() < deadline:
        time.sleep(0.25)
        now = state(record)
    return now


def _terminate(pid: int, wait: float) -> bool:
    """SIGTERM, then wait up to `wait` seconds for the process to end."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + max(wait, 0.0)
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True
