"""Which service holds which store: `hippocampus serve` records itself (URL, pid, store) in
HIPPOCAMPUS_HOME/services/<pid>.json while it runs, so that a service that `connect()` started in the
background can be found, used (`--server URL`) and stopped (`hippocampus service stop`).

A record is written before the store opens and removed when the service ends (its return, Ctrl-C or
SIGTERM); a service killed with SIGKILL leaves its record, which `service status` shows as dead and
`service stop` removes. A record counts only while its pid is a running `hippocampus` process.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel, ValidationError
from rich.table import Table

from ..errors import ConfigError, HippocampusError, StoreError, StoreLockedError
from . import render
from .base import JsonOpt, WideOpt, _App, app, emit, store_overrides

STOP_WAIT_S = 45.0  # the service finishes its requests (uvicorn allows 30 s) and closes the store


class ServiceRecord(BaseModel):
    """One running `hippocampus serve`, as it recorded itself."""

    url: str
    pid: int
    store: str
    collection: str | None = None
    started_at: str


def services_dir() -> Path:
    """HIPPOCAMPUS_HOME/services (read at each call: a test or a shell may point HIPPOCAMPUS_HOME elsewhere)."""
    from ..config import DEFAULT_HOME

    return Path(os.environ.get("HIPPOCAMPUS_HOME") or DEFAULT_HOME) / "services"


def store_key(uri: str) -> str:
    """A store's uri as the store layer names it in its errors: a local path made absolute."""
    return uri.rstrip("/") if "://" in uri else str(Path(uri).expanduser().absolute())


def configured_store(uri: str | None = None) -> str:
    """`uri`, else the global --uri, else the settings' milvus_uri (the store is not opened)."""
    from ..config import MemoryConfig

    overrides = {**store_overrides(), **({"milvus_uri": uri} if uri else {})}
    try:
        return store_key(MemoryConfig(**{**overrides, "create_store_dir": True}).milvus_uri)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None


def client_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a service listening on host:port."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def alive(pid: int) -> bool:
    """Whether `pid` is a running (not zombie) hippocampus process; elsewhere than Linux, whether it exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True
    try:
        state = proc.joinpath("stat").read_text().rpartition(")")[2].split()[0]
        command = proc.joinpath("cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and b"hippocampus" in command  # a reused pid is not our service


def _path(pid: int) -> Path:
    return services_dir() / f"{pid}.json"


def register(host: str, port: int, store: str, collection: str | None) -> ServiceRecord:
    """Record this process as the service for `store` (written atomically: a reader never sees half)."""
    record = ServiceRecord(url=client_url(host, port), pid=os.getpid(), store=store_key(store), collection=collection,
                           started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    folder = services_dir()
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".{record.pid}.{hashlib.sha1(os.urandom(8)).hexdigest()[:8]}.tmp"
    temp.write_text(record.model_dump_json(), encoding="utf-8")
    os.replace(temp, _path(record.pid))
    return record


def unregister(pid: int) -> None:
    _path(pid).unlink(missing_ok=True)


def records() -> Iterator[ServiceRecord]:
    """Every record, oldest first; an unreadable file is skipped."""
    folder = services_dir()
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    for path in files:
        try:
            yield ServiceRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue


def holding(store: str) -> list[ServiceRecord]:
    """The running services recorded for `store`."""
    key = store_key(store)
    return [r for r in records() if r.store == key and alive(r.pid)]


def recorded_service(collection: str | None) -> ServiceRecord | None:
    """The running service recorded for the store the options name (and this collection), the newest;
    None at once when no service was ever recorded here (no settings read)."""
    folder = services_dir()
    if not folder.is_dir() or next(folder.glob("*.json"), None) is None:
        return None
    found = [r for r in holding(configured_store()) if r.collection == collection]
    return found[-1] if found else None


def locked_hint(exc: HippocampusError) -> str | None:
    """For a StoreLockedError on a store a recorded service holds: the one line that says how to reach it."""
    if not isinstance(exc, StoreLockedError) or not exc.uri:
        return None
    found = holding(exc.uri)
    if not found:
        return None
    r = found[-1]
    return (f"StoreLockedError: a service at {r.url} (pid {r.pid}) holds this store: add --server {r.url}, "
            "or `hippocampus service stop`")


def serving(host: str, port: int, store: str, collection: str | None, run: Callable[[], None]) -> None:
    """Run `run` (the service) recorded: the record goes when it returns, raises, or SIGTERM ends it
    (uvicorn re-raises SIGTERM after its graceful shutdown; the handler here removes the record first)."""
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
        run()
    finally:
        unregister(record.pid)
        if in_main:
            signal.signal(signal.SIGTERM, previous)


# ---------------------------------------------------------------------- `hippocampus service ...`
service_app = _App(name="service", help="The services `hippocampus serve` (or connect()) started on this machine.",
                   no_args_is_help=True, rich_markup_mode=None)
app.add_typer(service_app, name="service")


def _row(record: ServiceRecord) -> dict[str, Any]:
    return {**record.model_dump(), "alive": alive(record.pid)}


@service_app.command("status")
def status_cmd(as_json: bool = JsonOpt, wide: bool = WideOpt) -> None:
    """List the recorded services: URL, pid, store, and whether each is still running. A long store
    path is folded in its middle to fit the terminal (its file name stays); --wide or --json for it whole."""
    rows = [_row(r) for r in records()]
    width = render.UNLIMITED if wide else render.terminal_width()
    cells = [{"url": row["url"], "pid": str(row["pid"]), "state": "running" if row["alive"] else "dead", "store": row["store"],
              "since": row["started_at"].replace("T", " ")[:16]} for row in rows]
    names = ["url", "pid", "state", "store", "since"]
    fixed = {n: max([len(n)] + [render.cell_len(c[n]) for c in cells]) + 3 for n in names if n != "store"}
    room = width - sum(fixed.values()) - 4
    if room < 40:  # a narrow terminal: the store path matters more than when it started (--wide, --json)
        names.remove("since")
        room += fixed["since"]
    table = Table(title=render.literal(f"services recorded in {render.fold_middle(str(services_dir()), max(16, width - 22))}"))
    for name in names:
        table.add_column(name, no_wrap=True)
    for c in cells:
        table.add_row(*(render.literal(render.fold_middle(c[n], max(16, room)) if n == "store" else c[n]) for n in names))
    emit(as_json, rows, table if rows else None, None if rows else "no service recorded", wide=wide)


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
        if not alive(record.pid):
            stale.append(record.pid)
        elif _terminate(record.pid, wait):
            stopped.append(record.pid)
        else:
            stuck.append(record.pid)
            continue
        unregister(record.pid)
    out = {"store": store, "stopped": stopped, "stale_records_removed": stale, "still_running": stuck}
    if stuck:
        raise StoreError(f"the service (pid {', '.join(map(str, stuck))}) is still running after {wait:.0f} s; "
                               "`kill -9` it if it must go now")
    if not stopped and not stale:
        where = "any store" if every else store
        live = sum(1 for r in records() if alive(r.pid))
        emit(as_json, out, message=f"no recorded service holds {where}"
             + (f" ({live} other(s) running: `hippocampus service status`)" if live else ""))
        return
    words = [f"stopped pid {pid}" for pid in stopped] + ([f"removed {len(stale)} dead record(s)"] if stale else [])
    emit(as_json, out, message="; ".join(words))


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
