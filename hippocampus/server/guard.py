"""The service's front door: one ASGI middleware that refuses a hostile request before any work.

In this order, on every route (REST, the Web UI, MCP, the docs, /metrics, /healthz):

1. Host: only loopback names (any port) and the names the operator gives (`serve --allowed-host`);
   anything else is 421. A DNS name rebound to 127.0.0.1 makes a page same-origin with the
   service, and only the Host header tells.
2. Origin: a state-changing request (not GET/HEAD/OPTIONS) whose Origin is not the service's own
   (the scheme and the very Host of the request), is "null", or that says `Sec-Fetch-Site:
   cross-site` (or same-site: another port of the same machine) is 403. No Origin passes: curl,
   the Python Client and MCP clients send none, and a browser always sends one with such requests.
3. The key, before the body is read (/v1, /mcp, /metrics, and the docs unless they are public; a
   UI form other than the login needs a live session or a key header, else 401 to /ui/login):
   none or a wrong one is 401; wrong ones are counted per client address (AuthThrottle), and after
   a handful a minute they are answered 429 with Retry-After. A right key is never delayed, from
   that address too: the throttle makes guessing loud (and slows a guesser that stops at 429); the
   keys' 128 bits of entropy (auth.py) are what make it futile.
4. JSON only on /v1 and /mcp: a non-empty body of any other Content-Type is 415, so no form or
   text/plain request (which a browser sends cross-site without a preflight) reaches a verb.
   The UI's own form posts stay forms: Origin and the form token protect them.
5. The body-size cap, while reading: a Content-Length above it is 413 at once; a body of unknown
   length is counted as it streams and cut off with 413 beyond it. The cap is per route (bounds.py):
   1 MiB except on the bulk routes, and at most two large bodies are in the app at once.

Every answer carries nosniff, Referrer-Policy and X-Frame-Options; /ui pages also a
Content-Security-Policy without inline script and `Cache-Control: no-store` (as /v1 answers do).
One access-log line per request names the route template, never the raw path: query strings carry
user ids and search text (`--debug-access-log` adds the raw path, for debugging only).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..contract.wire import error_body
from ..embeddings.turns import current_tenant
from ..errors import AuthError, ConfigError
from ..models import TEXT_MAX_BYTES
from ..validation import METADATA_MAX_BYTES
from .auth import KeyRing
from .bounds import LargeGate, is_large, route_cap
from .deps import presented_key
from .hosts import HostList, is_loopback_host, split_host
from .metrics import method_label
from .sessions import COOKIE, SECURE_COOKIE
from .throttle import AuthThrottle

access_log = logging.getLogger("hippocampus.access")

# The largest valid request of one verb is an add, update or observe with a full text (TEXT_MAX_BYTES,
# 64 KiB; a control character is 1 byte in the store and 6 on the wire, "\u0001") and full metadata
# (METADATA_MAX_BYTES, 64 KiB as compact UTF-8 JSON; at most 3x that when a client escapes non-ASCII,
# a 4-byte character becoming a 12-byte surrogate pair), plus ids of at most 128 bytes: 6 * 64 + 3 * 64
# KiB + 1 KiB, about 0.57 MiB. Only the batch route (/v1/memories/batch) and an import grow with their
# input, and they have no bound of their own: 4 MiB, the MCP SDK's own cap, holds 7 of the worst
# single requests, or some 15,000 ordinary turns in one batch; a bigger import goes in several calls
# or under a larger `serve --max-body-bytes`.
_WORST_ONE_MEMORY = 6 * TEXT_MAX_BYTES + 3 * METADATA_MAX_BYTES + 1024
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
assert DEFAULT_MAX_BODY_BYTES > 7 * _WORST_ONE_MEMORY

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The methods any route serves; any other (a made-up name, TRACE, CONNECT) is 501 before routing, so no
# caller, with a key or without, can mint a new metrics label or log token per request (metrics.METHODS).
KNOWN_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"})
DOCS_PATHS = ("/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json")
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
COMMON_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"}


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def security_headers(path: str) -> dict[str, str]:
    """The headers every answer carries; /ui pages and /v1 answers are private: never cached."""
    out = dict(COMMON_HEADERS)
    if _under(path, "/ui"):
        out["Content-Security-Policy"] = CSP
        if not _under(path, "/ui/static"):
            out["Cache-Control"] = "no-store"
    elif _under(path, "/v1"):
        out["Cache-Control"] = "no-store"
    return out


@dataclass(frozen=True)
class GuardSettings:
    """What the operator sets (`serve --allowed-host/--max-body-bytes/--public-docs/--debug-access-log`)."""

    hosts: HostList = field(default_factory=HostList)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    public_docs: bool = False
    debug_access_log: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_body_bytes, bool) or not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1024:
            raise ConfigError(f"max_body_bytes must be a whole number of at least 1024, got {self.max_body_bytes!r}")


class BodyTooLarge(HTTPException):
    """Raised from `receive` when a body passes the cap; FastAPI lets an HTTPException through unchanged."""

    def __init__(self, cap: int):
        super().__init__(413, _too_large(cap))


def _too_large(cap: int) -> str:
    return (f"the request body is larger than {cap} bytes, this route's limit (batches and imports take up to "
            "serve --max-body-bytes; every other route at most 1 MiB)")


def _refusal(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> list[Message]:
    body = json.dumps(error_body(kind, message)).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    return [{"type": "http.response.start", "status": status, "headers": raw},
            {"type": "http.response.body", "body": body}]


class Guard:
    """The ASGI middleware itself; GuardedApp puts it outside every other layer, the 500 answer included."""

    def __init__(self, app: ASGIApp, settings: GuardSettings, keys: KeyRing, throttle: AuthThrottle,
                 observe: Callable[[str, str, int, float, str | None], None] | None = None,
                 ui_sessions: Callable[[], Any] = lambda: None):
        self.app, self.settings, self.keys, self.throttle, self.observe = app, settings, keys, throttle, observe
        self.ui_sessions = ui_sessions  # the UI's session table (sessions.Sessions), once the UI is mounted
        self.large = LargeGate()

    def _needs_key(self, path: str) -> bool:
        if self.keys.is_open:
            return False
        if _under(path, "/v1") or _under(path, "/mcp") or path == "/metrics":
            return True
        return path in DOCS_PATHS and not self.settings.public_docs

    def _check(self, scope: Scope, headers: Headers) -> list[Message] | None:
        """The refusal for this request, or None when it may go on to the app (its body not yet read)."""
        path, method = scope["path"], scope["method"]
        if method not in KNOWN_METHODS:
            return _refusal(501, "InvalidInput", f"this service does not implement that method; it answers to "
                            f"{', '.join(sorted(KNOWN_METHODS))}", {"Allow": ", ".join(sorted(KNOWN_METHODS)), "Connection": "close"})
        host = headers.get("host")
        if not self.settings.hosts.allows(host):
            return _refusal(421, "ConfigError", f"this service does not answer to the host name {host!r}; its "
                            "operator can add it with `serve --allowed-host NAME`")
        if method not in SAFE_METHODS:
            reason = _cross_site(headers, host or "")
            if reason:
                return _refusal(403, "Forbidden", f"cross-site request refused ({reason}): a state-changing request "
                                "must come from this service's own pages or from a client that sends no Origin")
        has_body = headers.get("transfer-encoding") is not None or headers.get("content-length", "0").strip() not in ("", "0")
        closing = {"Connection": "close"} if has_body else {}  # the unread body must not be taken for the next request
        if self._needs_key(path):
            refusal = self._authenticate(scope, closing)
            if refusal:
                return refusal
        elif not self.keys.is_open:  # any other face (a UI page, /healthz): a wrong key header counts all the same
            refusal = self._count_wrong_key(scope, closing)
            if refusal:
                return refusal
        if (has_body and method not in SAFE_METHODS and _under(path, "/ui") and path != "/ui/login"
                and not self.keys.is_open and not self._ui_caller(scope)):
            return _refusal(401, "AuthError", "log in first: /ui/login", {"Location": "/ui/login", **closing})
        if has_body and method not in SAFE_METHODS and (_under(path, "/v1") or _under(path, "/mcp")):
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media != "application/json":
                return _refusal(415, "InvalidInput", f"send the body as JSON (Content-Type: application/json), "
                                f"not {media or 'without a Content-Type'}", closing)
        length = headers.get("content-length")
        cap = route_cap(path, self.settings.max_body_bytes)
        if length and length.strip().isdigit() and int(length) > cap:
            return _refusal(413, "InvalidInput", _too_large(cap), closing)
        return None

    def _ui_caller(self, scope: Scope) -> bool:
        """A UI form's sender is known before its body is read: a live session of a key still in force
        (ui_support.live_session), or a valid key header."""
        request = Request(scope)
        sessions = self.ui_sessions()
        for name in (COOKIE, SECURE_COOKIE):
            session = sessions.get(request.cookies.get(name)) if sessions is not None else None
            if session is not None and (self.keys.is_open or session.key in self.keys.fingerprints):
                return True
        try:
            self.keys.resolve(presented_key(request))
            return True
        except AuthError:
            return False

    def _authenticate(self, scope: Scope, closing: dict[str, str]) -> list[Message] | None:
        key = presented_key(Request(scope))
        challenge = {"WWW-Authenticate": 'Bearer realm="hippocampus"', **closing}
        try:
            current_tenant.set(self.keys.resolve(key).name)  # its embedding and writes take turns with other tenants' (turns.py)
            return None
        except AuthError as exc:
            if key is None:  # no key is no guess (a web page cannot send one): not counted
                return _refusal(401, "AuthError", str(exc), challenge)
            return self._throttled(scope, closing) or _refusal(401, "AuthError", str(exc), challenge)

    def _count_wrong_key(self, scope: Scope, closing: dict[str, str]) -> list[Message] | None:
        """Where no key is needed, a key header that is wrong is still a guess: counted toward the
        throttle, and 429 once over it; the request otherwise goes on (a UI page asks for a login)."""
        key = presented_key(Request(scope))
        if key is None:
            return None
        try:
            self.keys.resolve(key)
            return None
        except AuthError:
            return self._throttled(scope, closing)

    def _throttled(self, scope: Scope, closing: dict[str, str]) -> list[Message] | None:
        """Count one wrong key of this client; the 429 when it is over the throttle's limit."""
        client = (scope.get("client") or ("unknown", 0))[0]
        wait = self.throttle.retry_after(client)
        self.throttle.failure(client)
        if wait is None:
            return None
        seconds = str(max(1, math.ceil(wait)))
        return _refusal(429, "AuthError", f"too many wrong API keys from this address; retry in {seconds} s",
                        {"Retry-After": seconds, **closing})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no route serves one: refused here, logged like any request
            await self._refuse_websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        extra = security_headers(scope["path"])
        cap = route_cap(scope["path"], self.settings.max_body_bytes)
        status, seen = [500], [0]
        flags = {"refused": False, "over": False, "started": False, "ours": False}

        async def forward(message: Message) -> None:
            """To the client, with the security headers on the start of the answer."""
            if message["type"] == "http.response.start":
                flags["started"] = True
                status[0] = message["status"]
                headers = MutableHeaders(raw=list(message.get("headers", [])))
                for name, value in extra.items():
                    headers[name] = value
                message = {**message, "headers": headers.raw}
            await send(message)

        async def too_large() -> None:
            flags["ours"] = True
            for part in _refusal(413, "InvalidInput", _too_large(cap), {"Connection": "close"}):
                await forward(part)

        async def send_from_app(message: Message) -> None:
            if flags["ours"]:
                return  # the app's answer after the guard's own
            if flags["over"] and not flags["started"]:  # the app's answer to a body cut off at the cap: 413 instead
                await too_large()
                return
            await forward(message)

        async def receive_counted() -> Message:
            if flags["over"]:
                raise BodyTooLarge(cap)
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > cap:
                    flags["over"] = True
                    raise BodyTooLarge(cap)
            return message

        tenant = current_tenant.set("")  # _check names the caller's tenant once its key is resolved
        try:
            refusal = self._check(scope, Headers(scope=scope))
            if refusal is not None:
                flags["refused"] = True
                for part in refusal:
                    await forward(part)
                return
            try:
                if is_large(scope["path"], Headers(scope=scope), self.settings.max_body_bytes):
                    async with self.large.semaphore:  # at most LARGE_IN_FLIGHT large bodies parsed at once
                        await self.app(scope, receive_counted, send_from_app)
                else:
                    await self.app(scope, receive_counted, send_from_app)
            except Exception:
                if not flags["over"]:
                    raise
            if flags["over"] and not flags["started"]:
                await too_large()
        finally:
            current_tenant.reset(tenant)
            self._log(scope, status[0], time.perf_counter() - started, flags["refused"])

    async def _refuse_websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket upgrade never reaches the app (`serve` does not even upgrade: connections.py):
        closed before it is accepted (the server answers 403), its path and query string never logged."""
        started = time.perf_counter()
        message = await receive()
        if message.get("type") == "websocket.connect":
            await send({"type": "websocket.close", "code": 1008})
        self._log({**scope, "method": "WEBSOCKET"}, 403, time.perf_counter() - started, True)

    def _log(self, scope: Scope, status: int, seconds: float, refused: bool) -> None:
        route = scope.get("route")
        template = "refused" if refused else (getattr(route, "path", None) or "unmatched")
        method = method_label(scope.get("method", ""))
        if refused and self.observe is not None:
            self.observe(method, template, status, seconds, None)
        if self.settings.debug_access_log:
            query = scope.get("query_string", b"").decode("latin-1")
            access_log.info("%s %s %d %.1fms %s%s", method, template, status, seconds * 1000, scope["path"],
                            f"?{query}" if query else "")
        else:
            access_log.info("%s %s %d %.1fms", method, template, status, seconds * 1000)


def _cross_site(headers: Headers, host: str) -> str | None:
    """Why a state-changing request is cross-site, or None: its Sec-Fetch-Site, an opaque ("null")
    Origin, or an Origin other than this service as the request itself names it."""
    site = (headers.get("sec-fetch-site") or "").lower()
    if site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site: {site}"
    origin = headers.get("origin")
    if origin is None:
        return None
    if origin.strip().lower() == "null":
        return "Origin: null"
    parts = urlsplit(origin.strip())
    # Behind a TLS proxy the service itself sees http while the page is https: the scheme may differ
    # by that much, the host and port (the Host the proxy passes on) may not.
    if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.strip().lower() or parts.path not in ("", "/"):
        return f"Origin: {origin[:100]}"
    return None


class GuardedApp(FastAPI):
    """FastAPI with the Guard as its outermost layer, so that every answer (a 500 too) passes it.
    create_app sets `state.guard`, `state.keys`, `state.auth_throttle` and `state.metrics` first."""

    def build_middleware_stack(self) -> ASGIApp:
        inner = super().build_middleware_stack()
        metrics = getattr(self.state, "metrics", None)
        return Guard(inner, self.state.guard, self.state.keys, self.state.auth_throttle,
                     observe=metrics.observe if metrics is not None else None,
                     ui_sessions=lambda: getattr(self.state, "ui_sessions", None))


def install(app: GuardedApp, hosts: HostList, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
            public_docs: bool = False, debug_access_log: bool = False) -> GuardSettings:
    """The guard's settings and throttle on `app.state` (the UI's login uses `app.state.auth_throttle`)."""
    settings = GuardSettings(hosts, max_body_bytes, public_docs, debug_access_log)
    app.state.guard, app.state.auth_throttle = settings, AuthThrottle()
    return settings


def log_settings(settings: GuardSettings, bind: str, log: logging.Logger) -> None:
    """One start-up line naming the Host names served; a warning when a wildcard bind serves only loopback names."""
    named = [f"{n}:{p}" if p else n for n, p in settings.hosts.names]
    log.info("host names served: loopback%s; request bodies up to %d bytes", "".join(f", {n}" for n in named),
             settings.max_body_bytes)
    if not named and not is_loopback_host(bind):
        log.warning("listening on %s, but only loopback Host names are served: add --allowed-host NAME for each "
                    "name or address clients use", bind)


__all__ = ["AuthThrottle", "BodyTooLarge", "DEFAULT_MAX_BODY_BYTES", "Guard", "GuardSettings", "GuardedApp", "HostList",
           "install", "is_loopback_host", "log_settings", "security_headers", "split_host"]
