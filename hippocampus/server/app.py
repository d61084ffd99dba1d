"""The service: one process, one Memory (store open once, embedder loaded once), served over HTTP.

`create_app` assembles the FastAPI application around a Memory; `run_server` is what
`hippocampus serve` runs: it opens the Memory, refuses to listen beyond loopback without keys, and
serves with uvicorn until SIGINT/SIGTERM, then finishes the requests in flight and closes the store.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._version import __version__
from ..contract import liveness, store_identity
from ..contract.defaults import DEFAULT_HOST, DEFAULT_PORT, STORE_WAIT_S
from ..contract.wire import error_body
from ..errors import ConfigError, HippocampusError, NotFound, http_status
from ..memory import Memory
from .auth import KeyRing
from .deps import authenticate
from .docs import mount_docs
from .guard import DEFAULT_MAX_BODY_BYTES, GuardedApp, GuardSettings, HostList, install, is_loopback_host, log_settings
from .jobs import Consolidations
from .logs import described, private_files
from .metrics import CountingLLM, ServiceMetrics, method_label, timer
from .rest import ROUTERS
from .store_wait import open_waiting
from .trace_requests import export_to_collector, install_tracing, without_native_spans

log = logging.getLogger("hippocampus.server")


def create_app(memory: Memory, keys: KeyRing | None = None, *, cron: str | None = None,
               close_memory: bool = True, mcp: bool = True, decay_cron: str | None = None,
               decay_at_start: bool = False, ui: bool = True, behind_https: bool = False,
               ui_session_s: float = 12 * 3600, allowed_hosts: Sequence[str] = (),
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, public_docs: bool = False,
               debug_access_log: bool = False, service_secret: str | None = None) -> FastAPI:
    """The application around `memory`, with the Web UI at /ui unless `ui` is False. With
    `close_memory`, shutting the app down closes it;
    `cron` schedules consolidation, `decay_cron` the decay step alone; `decay_at_start` decays in
    the background at start when the last pass over every user is over a day old. `behind_https`:
    the service is reached over TLS (a proxy), so the UI's session cookie is `Secure` and `__Host-`;
    `ui_session_s`: how long a UI login lasts (sessions live in this process: a restart ends them).
    The guard (guard.py) answers only to loopback names and `allowed_hosts`, caps bodies at
    `max_body_bytes`, needs a key for the docs unless `public_docs`; `debug_access_log` logs raw paths.
    `service_secret`: the secret of this service's record (cli/registry.py), which /healthz proves it holds."""
    keys = keys if keys is not None else KeyRing()
    metrics = ServiceMetrics(lambda: memory.stats())
    if not isinstance(memory.llm, CountingLLM):  # count the processors' LLM calls (the rules provider too)
        memory.llm = CountingLLM(memory.llm, metrics)
    jobs = Consolidations(memory, metrics)
    started = time.time()
    mcp_app = None
    hosts = HostList(allowed_hosts)
    if mcp:
        from .mcp import http_app  # noqa: PLC0415 - the MCP SDK loads only when MCP is served

        mcp_app = http_app(memory, keys, observe=metrics.observe, hosts=hosts, max_body_bytes=max_body_bytes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if cron:
            jobs.schedule(cron)
        if decay_cron:
            jobs.schedule_decay(decay_cron)
        if decay_at_start:
            jobs.decay_if_stale()
        if memory.config.write_decision == "deferred":
            jobs.start_pending_worker()
        try:
            if mcp_app is not None:
                async with mcp_app.router.lifespan_context(mcp_app):
                    yield
            else:
                yield
        finally:
            jobs.shutdown()
            if close_memory:
                memory.close()
            log.info("store closed")

    app = GuardedApp(title="Hippocampus", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Long-term memory for LLM agents. Every error answer is {\"error\": {\"type\", \"message\"}}.",
                  **without_native_spans())  # FastAPI's own spans carry raw paths and queries (ids): ours replace them
    app.state.memory, app.state.keys, app.state.metrics, app.state.consolidations = memory, keys, metrics, jobs
    app.state.behind_https, app.state.ui_session_s = behind_https, ui_session_s
    install(app, hosts, max_body_bytes=max_body_bytes, public_docs=public_docs,
            debug_access_log=debug_access_log)
    app.state.service_stats = lambda: {
        "version": __version__,
        "uptime_s": round(time.time() - started, 1),
        "endpoints": metrics.latency_table(),
        "consolidation": {"running": jobs.running, "next_run": jobs.next_run(), "runs": list(jobs.runs)},
        "leases": jobs.lease_holders(),  # every replica's background work and id workers (store/leases.py)
        "pending_decided": jobs.pending_decided,
    }
    for router in ROUTERS:
        app.include_router(router)
    mount_docs(app)  # /docs from the wheel's Swagger UI, offline (docs.py)
    _add_error_handlers(app)

    store_uri = getattr(getattr(memory, "config", None), "milvus_uri", None)

    @app.get("/healthz", summary="Liveness: answers while the store is open")
    def healthz(request: Request, response: Response) -> dict[str, str]:
        # to a caller holding the service's record, proof that this process wrote it (contract/liveness.py)
        answer = liveness.answers(service_secret, request.headers.get(liveness.CHALLENGE_HEADER), os.getpid())
        if answer is not None:
            response.headers[liveness.PROOF_HEADER] = answer
        # to a caller naming a store, which store this is, as a keyed fingerprint (contract/store_identity.py)
        held = store_identity.answers(store_uri, request.headers.get(store_identity.STORE_HEADER))
        if held is not None:
            response.headers[store_identity.STORE_HEADER] = held
        return {"status": "ok"}  # nothing more to strangers: the version is in the operator's /v1/stats

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics (operator key)")
    def prometheus(request: Request) -> PlainTextResponse:
        if not authenticate(request).is_operator:
            raise NotFound("not found")
        return PlainTextResponse(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    if ui:
        from .ui import mount  # noqa: PLC0415 - Jinja2 loads only when the UI is served

        mount(app)
    if mcp_app is not None:  # a route, not a mount: the endpoint is /mcp itself, never a redirect to /mcp/
        app.add_route("/mcp", mcp_app, include_in_schema=False)
    app.add_middleware(_Observe, metrics=metrics)
    install_tracing(app, memory.config)  # a span per request, joining the caller's traceparent (trace_requests.py)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """One error shape everywhere: {"error": {"type": <the library's class name>, "message": ...}}."""

    def answer(request: Request, status: int, kind: str, message: str) -> JSONResponse:
        request.scope.setdefault("state", {})["error_type"] = kind
        return JSONResponse(error_body(kind, message), status_code=status)

    @app.exception_handler(HippocampusError)
    async def library_error(request: Request, exc: HippocampusError) -> JSONResponse:
        status = http_status(exc)
        if status >= 500:  # the route template and the failure's kind, never the path or the message (user data)
            log.warning("%s %s: %s", method_label(request.method), _template(request), described(exc))
            log.debug("%s: %s", type(exc).__name__, exc)
        if request.url.path.startswith("/ui") and type(exc).__name__ != "AuthError":
            from .ui import error_page  # noqa: PLC0415

            request.scope.setdefault("state", {})["error_type"] = type(exc).__name__
            return error_page(request, status, type(exc).__name__, str(exc))
        return answer(request, status, type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return answer(request, 422, "InvalidInput", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # every answer names a documented type: a body FastAPI cannot parse (binary, not UTF-8) is the
        # caller's bad input, 422 like any other; never the framework's own "HTTPError"
        status, message = exc.status_code, str(exc.detail)
        kind = _HTTP_KINDS.get(status, "InvalidInput" if status < 500 else "InternalError")
        if status == 400 and "parsing the body" in message:  # InvalidInput is 422 (errors.http_status)
            status, message = 422, "the request body is not valid JSON (send UTF-8 JSON with Content-Type: application/json)"
        return answer(request, status, kind, message)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error in %s %s: %s", method_label(request.method), _template(request), described(exc))
        return answer(request, 500, "InternalError", f"unexpected {type(exc).__name__}; see the server log")


def _template(request: Request) -> str:
    """The route template of a request (/ui/users/{user_id}/memories), never its path."""
    return getattr(request.scope.get("route"), "path", None) or "unmatched"


_HTTP_KINDS = {401: "AuthError", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed"}  # other 4xx: InvalidInput


class _Observe:
    """ASGI middleware: latency, status and error type of every request, labelled by route template
    (never the raw path, which carries ids, nor anything from the body or the key)."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(("/metrics", "/mcp")):
            await self.app(scope, receive, send)
            return
        elapsed, status = timer(), [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            error = scope.get("state", {}).get("error_type")
            self.metrics.observe(scope["method"], endpoint, status[0], elapsed(), error)


def _check_port(host: str, port: int) -> None:
    """ConfigError when `host:port` cannot be listened on (a port in use, an address not of this machine),
    found by binding as uvicorn will (SO_REUSEADDR): one line before the store is opened."""
    import errno  # noqa: PLC0415
    import socket  # noqa: PLC0415

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError, OverflowError) as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is in use (another service? `hippocampus service status` "
                                  "lists the ones started here); choose another --port") from None
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def run_server(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, keys_file: str | None = None,
               cron: str | None = None, mcp: bool = True, log_level: str = "info", decay_cron: str | None = None,
               allowed_hosts: Sequence[str] = (), max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, public_docs: bool = False,
               debug_access_log: bool = False, behind_https: bool = False, ui_session_hours: float = 12.0,
               trusted_proxies: Sequence[str] = (), service_secret: str | None = None,
               store_wait_s: float = STORE_WAIT_S, **overrides: Any) -> None:
    """Open the store, serve until interrupted, then finish in-flight requests and close the store.
    Unless decay_preset is off, decay runs at start when its last pass is over a day old. A specific
    address to listen on is served as a Host name too (an address is never a rebound DNS name); the
    access log is the guard's (route templates), not uvicorn's (raw paths with their query strings).
    Connections are bounded (connections.py): a deadline on each request's head and body, a cap on open
    connections; X-Forwarded-For is believed only from `trusted_proxies` (none by default). `service_secret`:
    the secret of the record `serve` wrote (cli/registry.py), proved at /healthz. A store another process
    holds is waited for up to `store_wait_s` seconds (store_wait.py), then StoreLockedError."""
    import uvicorn  # noqa: PLC0415

    from .connections import uvicorn_settings  # noqa: PLC0415 - uvicorn loads only when serving
    from .key_reload import hold_sighup, reload_on_sighup  # noqa: PLC0415

    hold_sighup()  # before the keys are read and the store opens (seconds): a SIGHUP meanwhile is held, not fatal
    keys = KeyRing.load(keys_file)
    if keys.is_open and not is_loopback_host(host):
        raise ConfigError(f"refusing to listen on {host} without API keys: set HIPPOCAMPUS_API_KEY (or "
                          "HIPPOCAMPUS_API_KEYS / --keys-file), or listen on 127.0.0.1")
    from ..consolidation.schedule import cron_trigger  # noqa: PLC0415

    for expression in (cron, decay_cron):
        if expression:
            cron_trigger(expression)  # a malformed expression is refused before the store opens
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host  # an IPv6 address as a Host names it
    names = [*allowed_hosts, *([bound] if host not in ("", "0.0.0.0", "::") and not is_loopback_host(host) else [])]
    GuardSettings(HostList(names), max_body_bytes)  # a malformed name or cap is refused before the store opens
    if not ui_session_hours > 0:
        raise ConfigError(f"--ui-session-hours must be above 0, not {ui_session_hours}")
    _check_port(host, port)
    private_files()  # the store, milvus-lite's own files and anything else the service writes: 0600 / 0700
    memory = open_waiting(lambda: Memory(**overrides), store_wait_s)  # a short command holding it finishes first
    export_to_collector(memory.config)  # OTEL_EXPORTER_OTLP_ENDPOINT, with tracing on (docs/tracing.md)
    app = create_app(memory, keys, cron=cron, mcp=mcp, decay_cron=decay_cron,
                     decay_at_start=memory.config.decay_preset != "off", allowed_hosts=names,
                     max_body_bytes=max_body_bytes, public_docs=public_docs, debug_access_log=debug_access_log,
                     behind_https=behind_https, ui_session_s=ui_session_hours * 3600, service_secret=service_secret)
    log.info("serving %s on http://%s:%d (%s)", memory.config.milvus_uri, host, port,
             "open, loopback only" if keys.is_open else f"{len(keys)} API key(s)")
    log_settings(app.state.guard, host, log)
    if hasattr(signal, "SIGHUP") and threading.current_thread() is threading.main_thread():
        reload_on_sighup(app.state)  # `kill -HUP <pid>`: the keys read again (key_reload.py)
    uvicorn.run(app, host=host, port=port, log_level=log_level, **uvicorn_settings(trusted_proxies))
