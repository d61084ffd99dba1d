"""The ranking stage after fusion: similarity, time decay and importance, added up.

    final = relevance
          + recency_weight    * 0.5 ** (age_days / half_life_days)
          + hit_weight        * min(1, log1p(hit_count) / log1p(10))
          + importance_weight * importance

`relevance` is the fused score (the cosine in dense mode). `age_days` counts from the later of the
memory's event time (`ts`) and its last confirmed use (`metadata.last_used_at`, epoch seconds,
if present) to `now`. `importance` is `metadata.importance` in [0, 1] (0.5 when absent). A common
recipe weighs the cosine, a 30-day exponential decay and importance by fixed weights 0.6/0.2/0.2;
here each term has its own weight so that a deployment can switch them on one by one.

All weights default to 0 (the stage is then the identity): on LoCoMo, where questions ask about
any point of a months-long conversation, a recency bonus lowered recall (docs/performance.md).
Turn them on where recent and often-used memories should win ties.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ..models import now_ts

_DAY = 86400.0


@dataclass(frozen=True)
class RankParams:
    recency_weight: float = 0.0
    half_life_days: float = 30.0
    hit_weight: float = 0.0
    importance_weight: float = 0.0

    @property
    def active(self) -> bool:
        return any(w != 0 for w in (self.recency_weight, self.hit_weight, self.importance_weight))

    @classmethod
    def from_config(cls, config: Any) -> "RankParams":
        return cls(
            recency_weight=float(config.rank_recency_weight),
            half_life_days=float(config.rank_half_life_days),
            hit_weight=float(config.rank_hit_weight),
            importance_weight=float(config.rank_importance_weight),
        )


def recency(ts: int, metadata: dict[str, Any], now: int, half_life_days: float) -> float:
    """0.5 ** (age / half-life), 1.0 for a memory from now (or the future)."""
    last = ts
    life = metadata.get("life") if isinstance(metadata.get("life"), dict) else {}
    for used in (metadata.get("last_used_at"), life.get("last_activated") if life.get("activation_count") else None):
        if isinstance(used, (int, float)) and not isinstance(used, bool):
            last = max(last, int(used))
    age_days = max(0.0, (now - last) / _DAY)
    return 0.5 ** (age_days / half_life_days) if half_life_days > 0 else 0.0


def usage(hit_count: int) -> float:
    """Saturating use signal: 0 for never used, 1 from ten confirmed uses on."""
    return min(1.0, math.log1p(max(0, hit_count)) / math.log1p(10))


def importance(metadata: dict[str, Any]) -> float:
    """The lifecycle's importance (metadata.life) where it exists, else the caller's metadata.importance, else 0.5."""
    life = metadata.get("life") if isinstance(metadata.get("life"), dict) else {}
    value = life.get("importance", metadata.get("importance"))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return min(1.0, max(0.0, float(value)))
    return 0.5


def rank(items: Sequence[Any], params: RankParams, now: int | None = None) -> list[Any]:
    """Re-score fusion candidates (objects with `.score` and `.row`), best first.

    The identity when every weight is 0; ties keep the incoming order.
    """
    if not params.active:
        return list(items)
    now = now_ts() if now is None else now
    for item in items:
        row = item.row
        meta = row.get("metadata") or {}
        bonus = {
            "recency": params.recency_weight * recency(int(row.get("ts", 0)), meta, now, params.half_life_days),
            "usage": params.hit_weight * usage(int(row.get("hit_count") or 0)),
            "importance": params.importance_weight * importance(meta),
        }
        item.parts = {**getattr(item, "parts", {}), **bonus}
        item.score = item.score + sum(bonus.values())
    order = {id(item): i for i, item in enumerate(items)}
    return sorted(items, key=lambda it: (-it.score, order[id(it)]))
