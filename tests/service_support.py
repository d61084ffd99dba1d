"""The service for tests: in-process through the Client's `transport=` seam (no socket: most tests), or
a real uvicorn server on a free loopback port, in a thread (one app) or a process (`hippocampus serve`),
for what needs a socket (connection limits, a browser, another process or language)."""

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
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx
import uvicorn
from starlette.testclient import TestClient

START_GUARD_S = 120  # turns a hang into a failure; never asserts speed
IN_PROCESS_URL = "http://127.0.0.1:8765"  # a loopback name, as the guard wants; nothing listens there


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


class AppTransport(httpx.BaseTransport):
    """A sync httpx transport that hands each request to an ASGI app in this process: httpx's own
    ASGITransport, run in the event loop that holds the app's lifespan. A crash in the app is a 500,
    as uvicorn answers it, and the peer is loopback, as a local client's would be."""

    def __init__(self, app: Any, portal: anyio.from_thread.BlockingPortal):
        self._asgi = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=("127.0.0.1", 50000))
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()

        async def send() -> httpx.Response:
            answer = await self._asgi.handle_async_request(request)
            raw = b"".join([chunk async for chunk in answer.stream])  # as sent: any content-encoding kept
            return httpx.Response(answer.status_code, headers=answer.headers, stream=httpx.ByteStream(raw),
                                  extensions=answer.extensions)

        return self._portal.call(send)


class AsyncAppTransport(httpx.AsyncBaseTransport):
    """The same for AsyncClient: the request still runs in the app's own event loop."""

    def __init__(self, sync: AppTransport):
        self._sync = sync

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return await anyio.to_thread.run_sync(self._sync.handle_request, request)


@contextmanager
def in_process(app: Any) -> Iterator[AppTransport]:
    """Run `app`'s lifespan through the whole ASGI app, as uvicorn does (Starlette's TestClient holds it
    and its event loop), and yield a transport into it: `Client(IN_PROCESS_URL, transport=t)`,
    `httpx.Client(base_url=IN_PROCESS_URL, transport=t)`, or `AsyncClient(IN_PROCESS_URL,
    transport=AsyncAppTransport(t))`."""
    with TestClient(app, base_url=IN_PROCESS_URL) as held:
        yield AppTransport(app, held.portal)


@contextmanager
def app_http(app: Any, timeout: float = 60.0) -> Iterator[httpx.Client]:
    """An httpx client into `app` in-process (`in_process`), its paths relative: `http.get("/healthz")`."""
    with in_process(app) as transport, httpx.Client(base_url=IN_PROCESS_URL, transport=transport, timeout=timeout) as http:
        yield http


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
