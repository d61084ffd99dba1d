"""The service: one process, one Memory (store open once, embedder loaded once), served over HTTP.

`create_app` assembles the FastAPI application around a Memory; `run_server` is what
`hippocampus serve` runs: it opens the Memory, refuses to listen beyond loopback without keys, and
serves with uvicorn until SIGINT/SIGTERM, then finishes the requests in flight and closes the store.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..defaults import DEFAULT_HOST, DEFAULT_PORT
from ..errors import ConfigError, HippocampusError, NotFound, http_status
from ..memory import Memory
from ..wire import error_body
from .auth import KeyRing
from .deps import authenticate
from .jobs import Consolidations
from .metrics import CountingLLM, ServiceMetrics, timer
from .rest import router

log = logging.getLogger("hippocampus.server")


def create_app(memory: Memory, keys: Optional[KeyRing] = None, *, cron: Optional[str] = None,
               close_memory: bool = True, mcp: bool = True, decay_cron: Optional[str] = None,
               decay_at_start: bool = False, ui: bool = True) -> FastAPI:
    """The application around `memory`, with the Web UI at /ui unless `ui` is False. With
    `close_memory`, shutting the app down closes it;
    `cron` schedules consolidation, `decay_cron` the decay step alone; `decay_at_start` decays in
    the background at start when the last pass over every user is over a day old."""
    keys = keys if keys is not None else KeyRing()
    metrics = ServiceMetrics(lambda: memory.stats())
    if not isinstance(memory.llm, CountingLLM):  # count the processors' LLM calls (the rules provider too)
        memory.llm = CountingLLM(memory.llm, metrics)
    jobs = Consolidations(memory, metrics)
    started = time.time()
    mcp_app = None
    if mcp:
        from .mcp import http_app  # noqa: PLC0415 - the MCP SDK loads only when MCP is served

        mcp_app = http_app(memory, keys, observe=metrics.observe)

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

    app = FastAPI(title="Hippocampus", version=__version__, lifespan=lifespan,
                  description="Long-term memory for LLM agents. Every error answer is {\"error\": {\"type\", \"message\"}}.")
    app.state.memory, app.state.keys, app.state.metrics, app.state.consolidations = memory, keys, metrics, jobs
    app.state.service_stats = lambda: {
        "version": __version__,
        "uptime_s": round(time.time() - started, 1),
        "endpoints": metrics.latency_table(),
        "consolidation": {"running": jobs.running, "next_run": jobs.next_run(), "runs": list(jobs.runs)},
        "pending_decided": jobs.pending_decided,
    }
    app.include_router(router)
    _add_error_handlers(app)

    @app.get("/healthz", summary="Liveness: answers while the store is open")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

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
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """One error shape everywhere: {"error": {"type": <the library's class name>, "message": ...}}."""

    def answer(request: Request, status: int, kind: str, message: str) -> JSONResponse:
        request.scope.setdefault("state", {})["error_type"] = kind
        return JSONResponse(error_body(kind, message), status_code=status)

    @app.exception_handler(HippocampusError)
    async def library_error(request: Request, exc: HippocampusError) -> JSONResponse:
        status = http_status(exc)
        if status >= 500:
            log.warning("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
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
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return answer(request, exc.status_code, kind, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return answer(request, 500, "InternalError", f"unexpected {type(exc).__name__}; see the server log")


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


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_server(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, keys_file: Optional[str] = None,
               cron: Optional[str] = None, mcp: bool = True, log_level: str = "info", decay_cron: Optional[str] = None,
               **overrides: Any) -> None:
    """Open the store, serve until interrupted, then finish in-flight requests and close the store.
    Unless decay_preset is off, decay runs at start when its last pass is over a day old."""
    import uvicorn  # noqa: PLC0415

    keys = KeyRing.load(keys_file)
    if keys.is_open and not is_loopback_host(host):
        raise ConfigError(f"refusing to listen on {host} without API keys: set HIPPOCAMPUS_API_KEY (or "
                          "HIPPOCAMPUS_API_KEYS / --keys-file), or listen on 127.0.0.1")
    from ..consolidation.schedule import cron_trigger  # noqa: PLC0415

    for expression in (cron, decay_cron):
        if expression:
            cron_trigger(expression)  # a malformed expression is refused before the store opens
    memory = Memory(**overrides)
    app = create_app(memory, keys, cron=cron, mcp=mcp, decay_cron=decay_cron,
                     decay_at_start=memory.config.decay_preset != "off")
    log.info("serving %s on http://%s:%d (%s)", memory.config.milvus_uri, host, port,
             "open, loopback only" if keys.is_open else f"{len(keys)} API key(s)")
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=30)
