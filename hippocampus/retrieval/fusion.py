"""Fusing the dense and BM25 candidate lists into one ranking.

Why not plain reciprocal-rank fusion: BM25 over jieba tokens cannot match a Chinese question to an
English memory (or the reverse), so across languages its list holds only accidental matches (a
shared name or number). RRF gives that list the same vote as the dense list and pushes the right
memory down. Measured on LoCoMo (`python scripts/eval.py locomo`, docs/decisions.md, "Fusion"), the default
`weighted` fusion keeps the cosine similarity as the backbone and lets BM25 add a bounded bonus:

    score = cosine + bm25_weight * script_factor * bm25 / max_bm25

where `max_bm25` is the best BM25 score of this query (so the bonus is in [0, bm25_weight]) and
`script_factor` is 0 when the memory is written in a script (Han or Latin) that the query does not
use at all: a lexical match between them is a shared name or number, mostly noise. Every candidate has an exact cosine, because BM25
hits come back with their vectors.

A memory in a script the query does not use is one BM25 cannot see: its zero is no evidence. Yet
the bonus of a candidate BM25 can see (a Chinese memory sharing one common word with a Chinese
question) would push it past the English memory the question is about. So when both kinds are
among the candidates, BM25 only reorders the ones it can see: they take, in their fused order, the
places (the dense scores, `similarity + hubness`) they held among themselves, and a memory BM25
cannot see keeps its dense score and its place. Measured on a bilingual set of one user's
everyday memories (docs/crosslang.md); a store in one script never meets this case.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..text import HAS_CJK as _HAN
from ..text import script_of

FusionMethod = Literal["weighted", "rrf"]


def same_script(a: str, b: str) -> bool:
    """False only when both texts have letters and they differ in script."""
    return "other" in (a, b) or a == b


_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")


def query_scripts(query: str) -> set[str]:
    """Every script a query uses: 'redis 集群的配置' may match English and Chinese memories alike."""
    out = set()
    if _HAN.search(query):
        out.add("han")
    if _LATIN_WORD.search(query):
        out.add("latin")
    return out


def lexical_allowed(scripts: set[str], text: str) -> bool:
    """BM25 may vote for a memory only if the query uses the memory's script (or either has none)."""
    return not scripts or script_of(text) in scripts | {"other"}


@dataclass
class Candidate:
    """One memory proposed by dense search, BM25 or both."""

    row: dict[str, Any]
    similarity: float | None = None
    bm25: float | None = None  # positive BM25 score (Milvus returns its negative)
    dense_rank: int | None = None  # 0-based
    bm25_rank: int | None = None
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    hub: float = 0.0  # the hubness stage's correction of the similarity (retrieval/hubness.py)
    vector: Any = None  # the memory's vector when the search returned it (the hubness stage reads it)

    @property
    def id(self) -> int:
        return int(self.row["id"])


def collect(dense: Sequence[dict[str, Any]], bm25: Sequence[dict[str, Any]], query_vector: Any = None) -> list[Candidate]:
    """Union of both lists by id. Dense rows carry `_distance` = cosine; BM25 rows carry
    `_distance` = -score and, when asked for, their `vector` (used for an exact cosine)."""
    out: dict[int, Candidate] = {}
    for rank, row in enumerate(dense):
        row = dict(row)
        sim = float(row.pop("_distance"))
        out[int(row["id"])] = Candidate(row=row, similarity=sim, dense_rank=rank, vector=row.pop("vector", None))
    q = None if query_vector is None else np.asarray(query_vector, dtype=np.float32)
    for rank, row in enumerate(bm25):
        row = dict(row)
        score = -float(row.pop("_distance"))
        vec = row.pop("vector", None)
        cand = out.get(int(row["id"]))
        if cand is None:
            sim = None
            if q is not None and vec is not None:
                v = np.asarray(vec, dtype=np.float32)
                norm = float(np.linalg.norm(v) * np.linalg.norm(q))
                sim = float(v @ q / norm) if norm > 0 else 0.0
            cand = out[int(row["id"])] = Candidate(row=row, similarity=sim, vector=vec)
        cand.bm25 = max(score, 0.0)
        cand.bm25_rank = rank
    return list(out.values())


def fuse(
    candidates: list[Candidate],
    query: str,
    method: FusionMethod = "weighted",
    bm25_weight: float = 0.1,
    rrf_k: int = 60,
    script_aware: bool = True,
) -> list[Candidate]:
    """Score the candidates (best first); ties keep the dense order."""
    qscripts = query_scripts(query)
    if method == "rrf":
        for c in candidates:
            dense = 1.0 / (rrf_k + c.dense_rank + 1) if c.dense_rank is not None else 0.0
            lex = 1.0 / (rrf_k + c.bm25_rank + 1) if c.bm25_rank is not None else 0.0
            if script_aware and not lexical_allowed(qscripts, c.row.get("text", "")):
                lex = 0.0
            c.parts = {"rrf_dense": dense, "rrf_bm25": lex}
            c.score = dense + lex
    elif method == "weighted":
        top = max((c.bm25 or 0.0 for c in candidates), default=0.0)
        seen: list[Candidate] = []
        for c in candidates:
            lex = (c.bm25 or 0.0) / top if top > 0 else 0.0
            if script_aware and not lexical_allowed(qscripts, c.row.get("text", "")):
                lex = 0.0
            else:
                seen.append(c)
            c.parts = {"similarity": c.similarity or 0.0, "bm25_norm": lex}  # the hubness correction: Candidate.hub
            c.score = _dense(c) + bm25_weight * lex
        if 0 < len(seen) < len(candidates):
            _keep_unseen_places(candidates, seen)
    else:  # pragma: no cover - guarded by the config's Literal
        raise ValueError(f"unknown fusion method {method!r}")
    agreed = [c for c in candidates if _agreed(c) and (not script_aware or lexical_allowed(qscripts, c.row.get("text", "")))]
    return keep_agreed(sorted(candidates, key=_order), agreed)


AGREED_TOP, AGREED_WITHIN = 3, 5  # in both lists' top 3 -> in the fused top 5


def _agreed(c: Candidate) -> bool:
    return c.dense_rank is not None and c.bm25_rank is not None and c.dense_rank < AGREED_TOP and c.bm25_rank < AGREED_TOP


def keep_agreed(ranked: list[Candidate], agreed: Sequence[Candidate]) -> list[Candidate]:
    """A memory both dense search and BM25 put in their top 3 is never fused below the top 5 (issue 55,
    where a memory 1st by dense search was 30th after fusion). The ranks are the lists' own, while the
    scores fused here are not only theirs: the cross-language stage gives memories in another script a
    dense score of its own (crosslang.py), and enough of them can pass the memory both lists agree on.
    Such a memory below the 5th place takes the place of the last other memory in the top 5, scored just
    above it (`agreed` records the lift). Two lists agreeing is the strongest evidence a fusion has;
    every other candidate keeps its order."""
    top = ranked[:AGREED_WITHIN]
    ids = {id(c) for c in agreed}
    late = [c for c in ranked[AGREED_WITHIN:] if id(c) in ids]
    if not late:
        return ranked
    others = [c for c in top if id(c) not in ids]
    displaced = others[len(others) - len(late):]  # at most 3 agree, so the top 5 holds 2 others more than are late
    below = {id(c) for c in displaced}
    for i, c in enumerate(late):
        lifted = displaced[0].score + 1e-9 * (len(late) - i)
        c.parts["agreed"] = lifted - c.score
        c.score = lifted
    kept = [c for c in top if id(c) not in below]
    rest = [c for c in ranked[AGREED_WITHIN:] if id(c) not in {id(x) for x in late}]
    return [*sorted([*kept, *late], key=lambda c: -c.score), *displaced, *rest]


def _dense(c: Candidate) -> float:
    """The dense score: the cosine with the hubness stage's correction (0 without a cosine)."""
    return c.similarity + c.hub if c.similarity is not None else 0.0


def _keep_unseen_places(candidates: list[Candidate], seen: list[Candidate]) -> None:
    """BM25 reorders only the candidates it can see (`seen`): in their fused order they take their
    own dense scores, best first; the others keep their dense scores. `bm25_shift` records what BM25
    changed (0 for a memory it cannot see)."""
    places = sorted((_dense(c) for c in seen), reverse=True)
    for c, place in zip(sorted(seen, key=_order), places):
        c.score = place
    for c in candidates:
        c.parts["bm25_shift"] = c.score - _dense(c)


def _order(c: Candidate) -> tuple[float, float, float]:
    dense_rank = c.dense_rank if c.dense_rank is not None else math.inf
    bm25_rank = c.bm25_rank if c.bm25_rank is not None else math.inf
    return (-c.score, dense_rank, bm25_rank)
