"""Prometheus metrics of one service (prometheus-client), on a registry of its own.

Requests, errors and latency by endpoint (the route template, never a user id or a key), LLM
calls and failures through a counting wrapper around the service's ChatModel, consolidation runs,
and the memories by type, counted in the store when /metrics is scraped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from pydantic import BaseModel

from ..errors import LLMError
from ..llm import ChatModel, Prompt

T = TypeVar("T", bound=BaseModel)
# The method label's values: every method a route serves, and "other" for anything else (the guard
# refuses other methods before routing, so "other" stays rare); labels never come from the request as sent.
METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "WEBSOCKET", "MCP"})  # MCP: a tool call


def method_label(method: str) -> str:
    """The method as a metrics label or log token: one of a fixed set."""
    return method if method in METHODS else "other"


BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, math.inf)


class ServiceMetrics:
    def __init__(self, count_memories: Callable[[], dict[str, Any]]):
        self.registry = CollectorRegistry()
        self.requests = Counter("hippocampus_requests", "HTTP requests by endpoint and status", ["method", "endpoint", "status"], registry=self.registry)
        self.errors = Counter("hippocampus_errors", "error answers by endpoint and error type", ["method", "endpoint", "type"], registry=self.registry)
        self.latency = Histogram("hippocampus_request_seconds", "request latency by endpoint", ["method", "endpoint"],
                                 buckets=BUCKETS, registry=self.registry)
        self.llm_calls = Counter("hippocampus_llm_calls", "calls to the LLM (or the offline rules provider)", ["outcome"], registry=self.registry)
        self.consolidations = Counter("hippocampus_consolidation_runs", "consolidation runs", ["trigger", "outcome"], registry=self.registry)
        self.registry.register(_MemoryCounts(count_memories))

    def observe(self, method: str, endpoint: str, status: int, seconds: float, error_type: str | None) -> None:
        """One request; its labels from fixed sets whatever the request said (method_label; route templates)."""
        method = method_label(method)
        self.requests.labels(method, endpoint, str(status)).inc()
        self.latency.labels(method, endpoint).observe(seconds)
        if error_type:
            self.errors.labels(method, endpoint, error_type).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def latency_table(self) -> dict[str, dict[str, float]]:
        """Per endpoint: requests, errors, p50 and p99 in milliseconds (estimated from the histogram
        buckets the way Prometheus' histogram_quantile does)."""
        buckets: dict[str, list[tuple[float, float]]] = {}
        counts: dict[str, float] = {}
        for metric in self.latency.collect():
            for s in metric.samples:
                key = f"{s.labels['method']} {s.labels['endpoint']}"
                if s.name.endswith("_bucket"):
                    buckets.setdefault(key, []).append((float(s.labels["le"]), s.value))
                elif s.name.endswith("_count"):
                    counts[key] = s.value
        errors: dict[str, float] = {}
        for metric in self.errors.collect():
            for s in metric.samples:
                if s.name.endswith("_total"):
                    key = f"{s.labels['method']} {s.labels['endpoint']}"
                    errors[key] = errors.get(key, 0) + s.value
        out = {}
        for key, bs in sorted(buckets.items()):
            bs.sort()
            out[key] = {
                "requests": counts.get(key, 0),
                "errors": errors.get(key, 0),
                "p50_ms": round(quantile(bs, 0.50) * 1000, 2),
                "p99_ms": round(quantile(bs, 0.99) * 1000, 2),
            }
        return out


def quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """histogram_quantile over cumulative (upper bound, count) buckets, linear within a bucket."""
    total = buckets[-1][1] if buckets else 0
    if total <= 0:
        return 0.0
    rank = q * total
    lower, below = 0.0, 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(upper):
                return lower
            inside = cumulative - below
            return lower + (upper - lower) * ((rank - below) / inside if inside else 0.0)
        lower, below = upper, cumulative
    return lower


class _MemoryCounts:
    """memories by type, read from the store at scrape time (a count query per type)."""

    def __init__(self, count: Callable[[], dict[str, Any]]):
        self._count = count

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("hippocampus_memories", "memories in the store by type", labels=["memory_type"])
        try:
            numbers = self._count()
        except Exception:  # a store that cannot count must not break the scrape
            numbers = {}
        for key in ("episodic", "semantic"):
            if key in numbers:
                family.add_metric([key], float(numbers[key]))
        yield family


class CountingLLM:
    """The service's ChatModel, counted: every processor call is one `ok` or `failed` in the metrics."""

    def __init__(self, inner: ChatModel, metrics: ServiceMetrics):
        self.inner = inner
        self.metrics = metrics
        self.model = getattr(inner, "model", "unknown")

    def chat(self, system: str, user: str) -> str:
        return self._counted(lambda: self.inner.chat(system, user))

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T:
        return self._counted(lambda: self.inner.chat_json(prompt, schema))

    def _counted(self, call: Callable[[], Any]) -> Any:
        try:
            result = call()
        except LLMError:
            self.metrics.llm_calls.labels("failed").inc()
            raise
        self.metrics.llm_calls.labels("ok").inc()
        return result

    def __getattr__(self, name: str) -> Any:  # anything else a ChatModel offers (close, settings)
        return getattr(self.inner, name)


def timer() -> Callable[[], float]:
    start = time.perf_counter()
    return lambda: time.perf_counter() - start
