"""The service's side of tracing (docs/tracing.md): a span per HTTP request (REST, the MCP endpoint, the UI)
that joins the caller's trace (the W3C `traceparent` header, through the configured propagator) and is
the parent of the verb span (hippocampus/observability/tracing.py); and, for `hippocampus serve`, an OTLP exporter
when the OTEL_EXPORTER_OTLP_* variables name a collector and no tracer provider is set yet."""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import MemoryConfig
from ..observability import tracing

log = logging.getLogger("hippocampus.server")


def install_tracing(app: Any, config: MemoryConfig) -> None:
    """Add the request spans to `app` when the settings turn tracing on; nothing otherwise."""
    if tracing.enabled(config):
        app.add_middleware(TraceRequests)


def without_native_spans() -> dict[str, Any]:
    """FastAPI's keyword that turns its native request spans and logs off, where it has them (0.16x): they
    record the raw path and query (memory and user ids in clear) and validation failures' input values.
    Its route-labelled metrics stay. Empty on a FastAPI without native telemetry."""
    from fastapi import FastAPI

    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "logs": False}}


class TraceRequests:
    """ASGI middleware: one SERVER span per HTTP request, a child of the incoming trace context, named by
    the route template (never the raw path, which carries ids), with the method and the status."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry import propagate
        from opentelemetry.trace import SpanKind, Status, StatusCode

        carrier = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}
        method = scope.get("method", "GET")
        attributes = {"http.request.method": method, "url.scheme": scope.get("scheme", "http")}
        status = [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        with tracing.tracer().start_as_current_span(method, context=propagate.extract(carrier), kind=SpanKind.SERVER,
                                                    attributes=attributes, record_exception=False,
                                                    set_status_on_exception=False) as span:
            try:
                await self.app(scope, receive, send_status)
            except BaseException as exc:
                tracing.fail(span, exc)
                raise
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status[0])
                if status[0] >= 500:
                    span.set_status(Status(StatusCode.ERROR))


def export_to_collector(config: MemoryConfig) -> bool:
    """For `hippocampus serve`: send spans over OTLP when tracing is on, an endpoint is set in the
    environment and no SDK tracer provider exists yet (an application's own setup wins). True when set up."""
    if not tracing.enabled(config):
        return False
    if not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return False
    from opentelemetry import trace

    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[no-redef]
    except ImportError:
        log.warning("tracing: an OTLP endpoint is set but the exporter is missing: "
                    "pip install 'hippocampus[otel]' opentelemetry-exporter-otlp")
        return False
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "hippocampus")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    log.info("tracing: spans go to the OTLP collector the OTEL_EXPORTER_OTLP_* variables name")
    return True
