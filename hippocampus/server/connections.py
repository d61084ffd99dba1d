"""Connections bounded before any request reaches the app (issue 42): what `serve` hands uvicorn.

uvicorn alone keeps a half-sent request open for ever (its keep-alive timer runs only between
requests) and accepts connections until the process runs out of file descriptors; without a key,
1,100 idle sockets made a service unreachable. Here:

- a request's head (request line and headers) must arrive within HEAD_TIMEOUT_S of the connection
  opening or of the previous answer, and its body within BODY_TIMEOUT_S of the head; else the
  connection is closed (a slow client of a 4 MiB body on a 1 Mbit/s line needs about 34 s);
- at most MAX_CONNECTIONS connections are open at once: past it, the one that has waited longest for
  a request head is closed (a slow-loris holder goes, a new client gets in); past LIMIT_CONCURRENCY
  (the cap and a margin for bursts) uvicorn answers 503;
- an idle keep-alive connection closes after KEEP_ALIVE_S; a request head is at most MAX_HEAD_BYTES;
- proxy headers (X-Forwarded-For / -Proto) are believed only from the addresses `serve --trusted-proxy`
  names (none by default), so rotating X-Forwarded-For cannot dodge the failed-key throttle;
- WebSocket upgrades are not served (no route uses one): an upgrade request is plain HTTP, through the guard.

uvicorn documents no deadline on a request's head or body and no eviction past a connection cap (its
`limit_concurrency` answers 503, `timeout_keep_alive` runs only between requests), so the first two are a
subclass of its h11 protocol: uvicorn is pinned to one minor version in pyproject.toml, and
tests/server/test_connections_uvicorn.py holds the internals read here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("hippocampus.server")

HEAD_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 60.0
MAX_CONNECTIONS = 512  # under the usual 1,024 open files, with room for the store and the logs
LIMIT_CONCURRENCY = MAX_CONNECTIONS + 64  # uvicorn's 503 counts connections too: a backstop above the cap, for bursts
KEEP_ALIVE_S = 5
MAX_HEAD_BYTES = 16 * 1024  # request line and headers: a long filters query, cookies and a key fit


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head and body and a cap on open
    connections (class attributes; `protocol_class` makes a subclass with other numbers)."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    _deadline: asyncio.TimerHandle | None = None
    _waiting: str | None = None
    _since: float = 0.0
    _warned_full = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.head_timeout_s)
        if len(self.connections) > self.max_connections:
            self._make_room()

    def _make_room(self) -> None:
        """Over the cap: the connection that has waited longest for a request head goes (a slow-loris
        holder, or an idle keep-alive), so a new client still gets in; when every other one is busy
        with a request, the new one goes."""
        waiting = [c for c in self.connections if isinstance(c, BoundedH11Protocol) and c is not self
                   and c._waiting == "head" and not c.transport.is_closing()]
        victim = min(waiting, key=lambda c: c._since) if waiting else self
        if not self._warned_full:
            type(self)._warned_full = True
            log.warning("over %d open connections: those waiting longest for a request are closed", self.max_connections)
        victim._disarm()
        victim.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._follow()

    def _follow(self) -> None:
        """Move the deadline with the request: the head's while none has come, the body's while it
        streams, none while the app answers."""
        state = self.conn.their_state
        if state is h11.SEND_BODY and self.cycle is not None and not self.cycle.response_complete:
            if self._waiting != "body":
                self._arm(self.body_timeout_s, "body")
        elif state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            if self._waiting != "head":
                self._arm(self.head_timeout_s, "head")
        else:
            self._disarm()

    def _arm(self, seconds: float, what: str = "head") -> None:
        self._disarm()
        self._waiting, self._since = what, self.loop.time()
        self._deadline = self.loop.call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._waiting = None, None

    def _expire(self) -> None:
        """Too slow: the connection is closed (the app, if it was reading a body, sees a disconnect)."""
        self._deadline = None
        if not self.transport.is_closing():
            log.info("a request's %s did not arrive in time; connection closed", self._waiting)
            self.transport.close()


def protocol_class(head_timeout_s: float = HEAD_TIMEOUT_S, body_timeout_s: float = BODY_TIMEOUT_S,
                   max_connections: int = MAX_CONNECTIONS) -> type[BoundedH11Protocol]:
    """BoundedH11Protocol with these numbers (a test uses short ones)."""
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"head_timeout_s": float(head_timeout_s),
                                                              "body_timeout_s": float(body_timeout_s),
                                                              "max_connections": int(max_connections)})


def uvicorn_settings(trusted_proxies: Sequence[str] = (), **numbers: Any) -> dict[str, Any]:
    """The keyword arguments `serve` gives uvicorn.run / uvicorn.Config: the bounded protocol, the
    concurrency and keep-alive limits, no WebSocket, proxy headers only from `trusted_proxies`
    (addresses or networks), uvicorn's own access log off (the guard's names route templates)."""
    proxies = [p.strip() for p in trusted_proxies if p and p.strip()]
    return {"http": protocol_class(**numbers), "ws": "none", "limit_concurrency": LIMIT_CONCURRENCY,
            "timeout_keep_alive": KEEP_ALIVE_S, "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
            "proxy_headers": bool(proxies), "forwarded_allow_ips": proxies or [],
            "access_log": False, "server_header": False, "timeout_graceful_shutdown": 30}
