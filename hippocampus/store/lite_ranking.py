"""Hybrid search fused in this process for store/lite_client.py, as milvus-lite's server fuses it: the routes'
hits merged by key, RRF `sum 1/(k + rank + 1)` or weighted `sum w * score` (each score normalised per metric
when the ranker asks, pymilvus' WeightedRanker default), best first. milvus-lite reports a BM25 score negated."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backend import HybridKinds
from .lite_schema import float32

Hits = list[dict[str, Any]]


@dataclass(frozen=True)
class SearchRequest:
    """pymilvus' AnnSearchRequest as LiteClient.hybrid_search reads it: one route of a hybrid search."""

    data: list[Any]
    anns_field: str
    param: dict[str, Any]
    limit: int
    expr: str | None = None


@dataclass(frozen=True)
class Ranker:
    """pymilvus' RRFRanker or WeightedRanker as LiteClient.hybrid_search reads it: `dict()`, the fusion asked for."""

    strategy: str
    params: dict[str, Any] = field(default_factory=dict)

    def dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "params": dict(self.params)}


def rrf_ranker(k: int = 60) -> Ranker:
    """As pymilvus' `RRFRanker(k)`."""
    return Ranker("rrf", {"k": k})


def weighted_ranker(*weights: float, norm_score: bool = True) -> Ranker:
    """As pymilvus' `WeightedRanker(*weights, norm_score=True)`."""
    return Ranker("weighted", {"weights": list(weights), "norm_score": norm_score})


HYBRID = HybridKinds(SearchRequest, rrf_ranker, weighted_ranker)  # LiteClient.hybrid (backend.hybrid_kinds)


def _rrf(k: float) -> Callable[[list[Hits]], Hits]:
    def fuse(routes: list[Hits]) -> Hits:
        first: dict[Any, dict[str, Any]] = {}
        score: dict[Any, float] = {}
        for hits in routes:
            for rank, hit in enumerate(hits):
                first.setdefault(hit["id"], hit)
                score[hit["id"]] = score.get(hit["id"], 0.0) + 1.0 / (k + rank + 1)
        return _ranked(first, score)
    return fuse


_NORMALISE: dict[str, Callable[[float], float]] = {
    "COSINE": lambda s: (1.0 + s) * 0.5,
    "IP": lambda s: 0.5 + math.atan(s) / math.pi,
    "BM25": lambda s: 2.0 * math.atan(s) / math.pi,
    "L2": lambda d: 1.0 - 2.0 * math.atan(d) / math.pi,
}


def _weighted(spec: dict[str, Any], metrics: list[str]) -> Callable[[list[Hits]], Hits]:
    params = spec.get("params", {})
    weights = [float(w) for w in params.get("weights", [])]
    normalise = bool(params.get("norm_score", False))

    def fuse(routes: list[Hits]) -> Hits:
        first: dict[Any, dict[str, Any]] = {}
        score: dict[Any, float] = {}
        for weight, metric, hits in zip(weights, metrics, routes):
            for hit in hits:
                value = _score(float(hit["distance"]), metric)
                if normalise:
                    value = _NORMALISE[metric](value)
                elif metric == "L2":  # smaller is nearer: turned so that larger is better, as for the others
                    value = _NORMALISE["L2"](value)
                first.setdefault(hit["id"], hit)
                score[hit["id"]] = score.get(hit["id"], 0.0) + weight * value
        return _ranked(first, score)
    return fuse


def _score(distance: float, metric: str) -> float:
    """A hit's score for fusion: milvus-lite reports a BM25 score negated (smaller is nearer), as its server does."""
    return -distance if metric == "BM25" else distance


def _ranked(first: dict[Any, dict[str, Any]], score: dict[Any, float]) -> Hits:
    order = sorted(score, key=lambda pk: -score[pk])
    return [{**first[pk], "distance": float32(score[pk])} for pk in order]


def fusion(spec: dict[str, Any], metrics: list[str]) -> Callable[[list[Hits]], Hits]:
    """The fusion pymilvus' ranker asks for (`ranker.dict()`: {"strategy": "rrf" | "weighted", "params": ...});
    `metrics` are the routes' metrics, in order."""
    if spec.get("strategy") == "rrf":
        return _rrf(float(spec.get("params", {}).get("k", 60)))
    return _weighted(spec, metrics)
