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
any point of a months-long conversation, a recency bonus lowered recall (docs/decisions.md, "Recency").
Turn them on where recent and often-used memories should win ties.

Then, with `mmr_weight` > 0, maximal marginal relevance (Carbonell and Goldstein, 1998): the list is
rebuilt greedily, each next memory the one whose score minus `mmr_weight` x its highest cosine to a
memory already placed is best, so that near-copies of one turn do not fill the top k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..models import now_ts

_DAY = 86400.0


@dataclass(frozen=True)
class RankParams:
    recency_weight: float = 0.0
    half_life_days: float = 30.0
    hit_weight: float = 0.0
    importance_weight: float = 0.0
    mmr_weight: float = 0.0

    @property
    def bonuses(self) -> bool:
        return any(w != 0 for w in (self.recency_weight, self.hit_weight, self.importance_weight))

    @property
    def active(self) -> bool:
        return self.bonuses or self.mmr_weight > 0

    @classmethod
    def from_config(cls, config: Any) -> RankParams:
        return cls(
            recency_weight=float(config.rank_recency_weight),
            half_life_days=float(config.rank_half_life_days),
            hit_weight=float(config.rank_hit_weight),
            importance_weight=float(config.rank_importance_weight),
            mmr_weight=float(config.rank_mmr_weight),
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
    if not params.bonuses:
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


def diversify(items: Sequence[Any], weight: float, fetch: Callable[[list[int]], dict[int, Any]]) -> list[Any]:
    """Maximal marginal relevance over candidates (`.score`, `.vector`, `.id`), best first; the identity
    at weight 0. `fetch` reads the vectors a search path did not return; an item without one is never
    penalised. Each score loses its penalty when placed (`parts["mmr"]`); a later penalty is never
    smaller, so the scores still fall down the list."""
    if weight <= 0 or len(items) < 2:
        return list(items)
    missing = [it.id for it in items if it.vector is None]
    found = fetch(missing) if missing else {}
    vecs = [it.vector if it.vector is not None else found.get(it.id) for it in items]
    unit = [None if v is None else np.asarray(v, dtype=np.float32) / (np.linalg.norm(v) or 1.0) for v in vecs]
    left, out = list(range(len(items))), []
    closest = [0.0] * len(items)  # each item's highest cosine to a placed one
    while left:
        best = max(left, key=lambda i: (items[i].score - weight * closest[i], -i))
        left.remove(best)
        items[best].parts = {**getattr(items[best], "parts", {}), "mmr": -weight * closest[best]}
        items[best].score -= weight * closest[best]
        out.append(items[best])
        if unit[best] is not None:
            for i in left:
                if unit[i] is not None:
                    closest[i] = max(closest[i], float(unit[i] @ unit[best]))
    return out
