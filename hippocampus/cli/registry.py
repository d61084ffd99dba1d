"""Which service holds which store: `hippocampus serve` records itself (URL, pid, store, a random secret)
in HIPPOCAMPUS_HOME/services/<pid>.json while it runs (the folder 0700, the record 0600; service.py writes
and reads these records; base.py names the holder in a StoreLockedError's line). A record counts while its
service proves, at /healthz, that it holds the record's secret (contract/liveness.py): a pid check alone
took a reused pid, or another service on the port, for ours. Nothing here imports the rest of the command line.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from ..contract import liveness
from ..errors import HippocampusError, StoreLockedError
from ..models.base import Model


class ServiceRecord(Model):
    """One running `hippocampus serve`, as it recorded itself."""

    url: str
    pid: int
    store: str
    collection: str | None = None
    started_at: str
    secret: str | None = None  # proved by the service, never shown (`service status` leaves it out)


PROOF_WAIT_S = 2.0  # a running service answers /healthz at once; a stuck one is stale
START_GRACE_S = 180.0  # a record this young whose process still runs is a service starting (store opening)
POLL_S = 0.25  # how often a command waiting for a starting service looks again


def services_dir() -> Path:
    """HIPPOCAMPUS_HOME/services (read at each call: a test or a shell may point HIPPOCAMPUS_HOME elsewhere).
    Where the variable is unset: config.DEFAULT_HOME if the settings are loaded, else what it would be
    (~/.hippocampus), without loading them (a noticeable share of a command going through a service)."""
    home = os.environ.get("HIPPOCAMPUS_HOME")
    if not home:
        config = sys.modules.get("hippocampus.config")
        home = str(config.DEFAULT_HOME) if config is not None else str(Path.home() / ".hippocampus")
    return Path(home) / "services"


def store_key(uri: str) -> str:
    """A store's uri as the store layer names it in its errors: a local path made absolute."""
    return uri.rstrip("/") if "://" in uri else str(Path(uri).expanduser().absolute())


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
                           started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           secret=secrets.token_urlsafe(32))
    folder = private_folder(services_dir())
    temp = folder / f".{record.pid}.{hashlib.sha1(os.urandom(8)).hexdigest()[:8]}.tmp"
    with os.fdopen(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
        out.write(record.model_dump_json())
    os.replace(temp, _path(record.pid))
    return record


def private_folder(folder: Path) -> Path:
    """`folder` made (parents too) and kept 0700. Why: a record names the store's path and the service's
    URL, the log beside the records what the service did; other local users read neither (issue 57).
    The folder is the service's own (HIPPOCAMPUS_HOME/services), so an existing one is tightened too."""
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        os.chmod(folder, 0o700)  # mkdir's mode passes through the umask; an older folder kept its mode
    return folder


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


def proves(record: ServiceRecord, wait: float = PROOF_WAIT_S) -> bool:
    """Whether the service at the record's URL answers /healthz with proof of the record's secret and pid
    (contract/liveness.py). stdlib http.client: a command going through a service loads no more."""
    if not record.secret:
        return False  # a record written before services proved themselves
    parts = urlsplit(record.url)
    if parts.scheme != "http" or not parts.hostname or not parts.port:
        return False
    challenge = secrets.token_hex(16)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=wait)
    try:
        connection.request("GET", "/healthz", headers={liveness.CHALLENGE_HEADER: challenge})
        response = connection.getresponse()
        answer = response.getheader(liveness.PROOF_HEADER) or ""
        response.read(4096)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    return response.status == 200 and hmac.compare_digest(answer, liveness.proof(record.secret, challenge, record.pid))


def state(record: ServiceRecord) -> str:
    """"running": the service proves itself; "starting": it does not yet, but its process runs and the record
    is young (a service opening its store writes its record first); else "stale" (its record may go, and
    its pid is never signalled: it may be anyone's now)."""
    if proves(record):
        return "running"
    return "starting" if starting(record) else "stale"


def starting(record: ServiceRecord) -> bool:
    """Whether the record is young and its process runs: a service still opening its store, not yet answering."""
    return _age_s(record) < START_GRACE_S and alive(record.pid)


def _age_s(record: ServiceRecord) -> float:
    try:
        return (datetime.now(timezone.utc) - datetime.fromisoformat(record.started_at)).total_seconds()
    except (ValueError, TypeError):
        return float("inf")


def holding(store: str, starting: bool = False) -> list[ServiceRecord]:
    """The services recorded for `store` that prove themselves (with `starting`, those starting too)."""
    key = store_key(store)
    wanted = ("running", "starting") if starting else ("running",)
    return [r for r in records() if r.store == key and state(r) in wanted]


def recorded_service(store: str, collection: str | None, wait_s: float = 0.0,
                     waiting: Callable[[ServiceRecord], None] = lambda record: None) -> ServiceRecord | None:
    """The running service recorded for `store` (a store_key) and this collection, the newest; None at once
    when no service was ever recorded here. A service recorded as starting (restarted, waiting for the
    store: server/store_wait.py) is waited for up to `wait_s` seconds, `waiting(record)` told once, so a
    command goes through it rather than taking the store from it (issue 57)."""
    folder = services_dir()
    if not folder.is_dir() or next(folder.glob("*.json"), None) is None:
        return None
    key, deadline, told = store_key(store), time.monotonic() + wait_s, False
    while True:
        coming: ServiceRecord | None = None
        for record in reversed([r for r in records() if r.store == key and r.collection == collection]):
            if proves(record):
                return record
            if starting(record):
                coming = coming or record
            else:
                unregister(record.pid)  # its service does not answer as ours: the record goes, nobody is signalled
        if coming is None or time.monotonic() >= deadline:
            return None
        if not told:
            waiting(coming)
            told = True
        time.sleep(POLL_S)


def service_starting(store: str) -> ServiceRecord | None:
    """A service recorded as starting for `store` (a store_key): one that waits for the store a command holds
    (server/store_wait.py); that command gives way (cli/consolidate.py). Files and /proc only, no request."""
    key = store_key(store)
    return next((r for r in records() if r.store == key and starting(r)), None)


def locked_hint(exc: HippocampusError) -> str | None:
    """For a StoreLockedError on a store a recorded service holds: the one line that says how to reach it."""
    if not isinstance(exc, StoreLockedError) or not exc.uri:
        return None
    found = holding(exc.uri, starting=True)
    if not found:
        return None
    r = found[-1]
    return (f"StoreLockedError: a service at {r.url} (pid {r.pid}) holds this store: add --server {r.url}, "
            "or `hippocampus service stop`")
