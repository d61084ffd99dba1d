"""The context stage: a memory is recalled with its episode, as a hippocampus recalls events.

Three bonuses, applied to the fused candidates before the ranking stage:

    score = s + neighbour_weight * max(s(previous turn), s(next turn))
              + chat_weight      * max(s of the candidates from the same chat)
    where s = fused score + who_weight * [the query names this memory's `who`]

- *Episode* (default on): the chat that holds the best match is where the rest of the answer most
  likely is.
- *Who* (default on): "What did Melanie paint?" prefers what Melanie said.
- *Contiguity* (opt-in): the turns just before and after a memory in the same chat (by `ts`,
  within `window_seconds`) lend it their relevance, so "Yes, with my sister" is found through the
  question it answers. A neighbour outside the candidate list is scored by its cosine with the
  query. It needs one more store query per search, which milvus-lite answers in Python: that
  cost is why it is off by default.

Weights were chosen on the first five LoCoMo conversations and checked on the other five;
docs/decisions.md ("The context stage") has the figures. Only episodic memories with a chat_id take part; the stage
needs the query's vector, so BM25-only search skips it. All weights 0 make it the identity.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..text import HAS_CJK as _HAN


@dataclass(frozen=True)
class ContextParams:
    neighbour_weight: float = 0.0  # opt-in: one more store call per search
    chat_weight: float = 0.3
    who_weight: float = 0.08
    window_seconds: int = 600

    @property
    def active(self) -> bool:
        return any(w != 0 for w in (self.neighbour_weight, self.chat_weight, self.who_weight))

    @property
    def needs_neighbours(self) -> bool:
        return self.neighbour_weight != 0  # a window of 0 still links turns of the same second

    @classmethod
    def from_config(cls, config: Any) -> ContextParams:
        return cls(
            neighbour_weight=float(config.rank_neighbour_weight),
            chat_weight=float(config.rank_chat_weight),
            who_weight=float(config.rank_who_weight),
            window_seconds=int(config.rank_neighbour_window_seconds),
        )


def names_in(query: str, names: Iterable[str]) -> set[str]:
    """The `who` values the query names: whole words for Latin names, substrings for Chinese ones."""
    found = set()
    for name in {n for n in names if n and n.strip()}:
        if _HAN.search(name):
            hit = name in query
        else:
            hit = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query, re.IGNORECASE) is not None
        if hit:
            found.add(name)
    return found


def in_context(row: Mapping[str, Any]) -> bool:
    """Only episodic memories from a chat have neighbours and an episode."""
    return row.get("memory_type") == "episodic" and bool(row.get("chat_id"))


def windows(targets: Sequence[Mapping[str, Any]], window_seconds: int) -> list[tuple[str, int, int]]:
    """(chat_id, from_ts, to_ts) ranges that hold every target's possible neighbours, overlapping
    ranges of one chat merged: the neighbour query reads only these rows."""
    spans = sorted((str(t["chat_id"]), int(t["ts"]) - window_seconds, int(t["ts"]) + window_seconds) for t in targets)
    out: list[tuple[str, int, int]] = []
    for chat, lo, hi in spans:
        if out and out[-1][0] == chat and lo <= out[-1][2]:
            out[-1] = (chat, out[-1][1], max(out[-1][2], hi))
        else:
            out.append((chat, lo, hi))
    return out


def neighbours(
    targets: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], window_seconds: int
) -> dict[int, list[int]]:
    """For each target id, the ids of the memories just before and just after it in its chat
    (order: ts, then id), if they lie within `window_seconds`. `rows` are the chat's memories."""
    by_chat: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        by_chat.setdefault(str(r["chat_id"]), []).append((int(r["ts"]), int(r["id"])))
    for seq in by_chat.values():
        seq.sort()
    out: dict[int, list[int]] = {}
    for t in targets:
        key = (int(t["ts"]), int(t["id"]))
        seq = by_chat.get(str(t["chat_id"]), [])
        lo, hi = bisect.bisect_left(seq, key), bisect.bisect_right(seq, key)
        found = []
        if lo > 0 and key[0] - seq[lo - 1][0] <= window_seconds:
            found.append(seq[lo - 1][1])
        if hi < len(seq) and seq[hi][0] - key[0] <= window_seconds:
            found.append(seq[hi][1])
        out[key[1]] = found
    return out


def apply_context(
    items: Sequence[Any],
    query: str,
    params: ContextParams,
    neighbour_ids: Mapping[int, Sequence[int]] | None = None,
    outside: Mapping[int, tuple[float, str]] | None = None,
) -> list[Any]:
    """Re-score candidates (objects with `.score`, `.row`, `.id`, `.parts`), best first.

    `neighbour_ids` maps a candidate to its neighbours' ids; `outside` gives (cosine, who) for
    neighbours that are not candidates (a candidate keeps its fused score). Ties keep the
    incoming order.
    """
    if not params.active or not items:
        return list(items)
    outside = outside or {}
    neighbour_ids = neighbour_ids or {}
    whos = [str(it.row.get("who") or "") for it in items] + [w for _, w in outside.values()]
    named = names_in(query, whos) if params.who_weight else set()

    def who_bonus(who: str) -> float:
        return params.who_weight if who in named else 0.0

    base = {it.id: it.score + who_bonus(str(it.row.get("who") or "")) for it in items}
    known = dict(base)
    known.update({i: s + who_bonus(w) for i, (s, w) in outside.items() if i not in known})
    best_in_chat: dict[str, float] = {}
    for it in items:
        if in_context(it.row):
            chat = str(it.row["chat_id"])
            best_in_chat[chat] = max(best_in_chat.get(chat, float("-inf")), base[it.id])
    for it in items:
        parts = {"who": base[it.id] - it.score}
        if in_context(it.row):
            near = [known[j] for j in neighbour_ids.get(it.id, ()) if j in known]
            parts["neighbour"] = params.neighbour_weight * max(near) if near else 0.0
            parts["chat"] = params.chat_weight * best_in_chat[str(it.row["chat_id"])]
        it.parts = {**getattr(it, "parts", {}), **parts}
        it.score = it.score + sum(parts.values())
    order = {id(it): i for i, it in enumerate(items)}
    return sorted(items, key=lambda it: (-it.score, order[id(it)]))
