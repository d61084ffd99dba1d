"""`connect()`: a Client to the local service, starting one in the background when none answers.

One service for a machine: every program (agent, cron line, GUI) talks to one long-lived
service that owns the store and has loaded the embedder once. The service started here outlives
the caller (its own session, its log in HIPPOCAMPUS_HOME/services/serve.log, 0600) and records itself (URL, pid,
store) in HIPPOCAMPUS_HOME/services/ while it runs, as every `hippocampus serve` does: the CLI then
names it when it finds the store locked (use `--server URL`), `hippocampus service status` lists it and
`hippocampus service stop` stops it (SIGTERM: the requests in flight finish and the store is closed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from ..config import DEFAULT_HOME
from ..contract.defaults import DEFAULT_URL, ENV_SERVER
from ..errors import ConfigError, ServiceUnavailable
from .client import Client
from .transport import DEFAULT_TIMEOUT_S, LONG_TIMEOUT_S

START_TIMEOUT_S = 90.0  # opening the store and loading the embedder on a slow machine


def connect(url: str | None = None, *, api_key: str | None = None, start: bool = True,
            start_timeout: float = START_TIMEOUT_S, milvus_uri: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
            long_timeout: float = LONG_TIMEOUT_S) -> Client:
    """A Client to the service at `url` (default: HIPPOCAMPUS_SERVER, else http://127.0.0.1:8765).

    When nothing answers there and `start` is true, `hippocampus serve` is started in the background
    on that loopback address (on `milvus_uri`, else the configured store) and this waits until it
    answers. A remote URL is never started, only connected to. The service outlives this process:
    `hippocampus service stop` (or `kill <pid>`) stops it. `timeout` and `long_timeout` bound each request
    (see Client). With `milvus_uri`, a service answering at `url` is used only if it holds that store
    (contract/store_identity.py), else ConfigError before anything but the health check is sent."""
    client = Client(url, api_key=api_key, timeout=timeout, long_timeout=long_timeout)
    if client.healthy():
        return _same_store(client, milvus_uri)
    if not start:
        client.close()
        raise ServiceUnavailable(f"no Hippocampus service answers at {client.url} (start one with `hippocampus serve`)")
    parsed = urlparse(client.url)
    if parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        client.close()
        raise ConfigError(f"no service answers at {client.url}, and only a loopback service can be started from here")
    log_path = log_file()
    command = [sys.executable, "-m", "hippocampus", "serve", "--host", parsed.hostname, "--port", str(parsed.port or 80)]
    if milvus_uri:
        command[3:3] = ["--uri", milvus_uri]  # a global option: before the command
    # the service is started at this address, not sent to it: `serve` refuses HIPPOCAMPUS_SERVER
    env = {k: v for k, v in os.environ.items() if k != ENV_SERVER}
    with os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        os.fchmod(log.fileno(), 0o600)  # a log written by an older release kept its mode
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env=env)
    deadline = time.monotonic() + start_timeout
    while time.monotonic() < deadline:
        if client.healthy():
            return _same_store(client, milvus_uri)
        if process.poll() is not None and not client.healthy():  # it died (another one may have won the port)
            time.sleep(0.5)
            if client.healthy():
                return _same_store(client, milvus_uri)
            client.close()
            raise ServiceUnavailable(f"the service did not start (exit {process.returncode}); last lines of {log_path}:\n"
                                     + _tail(log_path))
        time.sleep(0.25)
    client.close()
    raise ServiceUnavailable(f"the service started at {client.url} did not answer within {start_timeout:.0f} s; see {log_path}")


def _same_store(client: Client, milvus_uri: str | None) -> Client:
    """`client`, once the service it reaches holds `milvus_uri` (when one is named); else ConfigError, with
    nothing sent but the health checks. Why: a service already answering at the URL, on another store,
    took the caller's writes into that store (issue 57)."""
    if milvus_uri is None:
        return client
    held = client.holds_store(milvus_uri)
    if held:
        return client
    client.close()
    if held is None:
        raise ConfigError(f"the service at {client.url} does not say which store it holds (an older release?), so it "
                          f"cannot be checked to hold milvus_uri={milvus_uri!r}; connect without milvus_uri to use "
                          "whatever store it holds")
    raise ConfigError(f"the service at {client.url} holds another store than milvus_uri={milvus_uri!r}; connect to "
                      "the service that holds it (another port), stop this one, or leave milvus_uri out to use its store")


def log_file() -> Path:
    """HIPPOCAMPUS_HOME/services/serve.log, beside the services' records, in their 0700 folder. Why there:
    what a service logs (its store's path, its requests' routes and failures) is for its user alone, and
    the home itself may be a folder others share (issue 57); cli/registry.py keeps the records' folder
    0700 the same way."""
    folder = Path(os.environ.get("HIPPOCAMPUS_HOME") or DEFAULT_HOME) / "services"
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder / "serve.log"


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


__all__ = ["connect", "DEFAULT_URL", "ENV_SERVER"]
