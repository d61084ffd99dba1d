"""A real uvicorn server on a free loopback port, in a thread (one app) or a process (`hippocampus serve`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

START_GUARD_S = 120  # turns a hang into a failure; never asserts speed


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(app, port: int | None = None) -> Iterator[str]:
    """Serve `app` with uvicorn in a thread; yields its base URL; shuts it down (lifespan included)."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_GUARD_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)


class ServiceProcess:
    """`python -m hippocampus --uri DB serve` in its own process group, its output in a log file."""

    def __init__(self, db: str, port: int, log: Path, *extra: str, env: dict[str, str] | None = None):
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        command = [sys.executable, "-m", "hippocampus", "--uri", db, "serve", "--port", str(port), "--no-mcp",
                   "--log-level", "info", *extra]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **(env or {})}, start_new_session=True)
        deadline = time.monotonic() + START_GUARD_S
        while not self.healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"service did not start:\n{log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

    def healthy(self) -> bool:
        try:
            return httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> bool:
        """SIGTERM: the graceful path. True when the service said it closed the store (uvicorn re-raises
        the signal after its shutdown, so the exit status is -15 either way)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=60)
        return "store closed" in self.log.read_text(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
