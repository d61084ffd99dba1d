"""The cross-language stage: memories in a script the query does not use are scored by the second
embedder (embeddings/crosslang.py), calibrated onto e5's scale (issue 35, docs/crosslang.md).

Why: with e5-small an English memory sits below every Chinese one for a Chinese question, often
outside the 20 candidates. USE multilingual v3 was trained on translation pairs and finds them, but
it is weaker than e5 within one language. So the stage gathers, by `xvector`, the memories nearest the
query that are written in another script, and gives every candidate in another script the dense score

    dense(top) + CROSS_SCALE * (use(c) - use(top))

in place of e5's (similarity + hubness), where top is the best candidate in the query's own script,
dense() its e5 score (with the hubness correction) and use() the USE cosine: a memory in another
language goes above the query's best own-language memory exactly when USE prefers it to that one, and
below by how much less USE likes it. Why relative: e5's scale moves with the query's language (a Chinese question scores every Chinese memory ~0.87, an English one its English
memories ~0.78), so a fixed map of USE onto e5 lost 5 of 12 zh->en questions on the tune half, and an
anchor on e5 alone (the own candidates' 90th percentile plus a USE margin) cost a same-language control.
The dense score goes into `Candidate.hub`, so the raw e5 cosine stays in `similarity` and every later
stage reads the dense score as before. Candidates in the query's own script keep e5's score, so a
single-script store (LoCoMo) or question never meets this stage's effect.

CROSS_SCALE was chosen on the tune half of tests/data/crosslang_pairs.jsonl only, never on the held-out
half (docs/crosslang.md): through scripts/eval_crosslang.py --crosslang, hybrid hit@3 cross-language /
same-language was 23 / 23 at 0.05, 22 / 24 at 0.1, 19 / 24 at 0.2 and 0.3; 0.1 is the best that keeps
every same-language control (a smaller scale leaves other-language memories between the places that
fusion's BM25 reorders, retrieval/fusion.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import EmbeddingError
from ..store import MEMORY_FIELDS
from ..store import filters as F
from ..store.schema import XVECTOR
from ..text import script_of
from .fusion import Candidate, query_scripts
from .rows import MARGIN, kept_row, lite_scope

if TYPE_CHECKING:
    from .search import Retriever
    from .stages import Query

log = logging.getLogger(__name__)

CROSS_SCALE = 0.1


def other_script(scripts: set[str], text: str) -> bool:
    """The memory is written in a script (han or latin) that the query does not use."""
    s = script_of(text)
    return bool(scripts) and s != "other" and s not in scripts


def placed(use_c: float, own: Sequence[tuple[float, float]]) -> float:
    """The dense score of a memory in another script with USE cosine `use_c`, against the best of the
    query's own-script candidates `own` ((dense score, USE cosine) each); its USE cosine alone without one."""
    if not own:
        return float(use_c)
    top, top_use = max(own)
    return top + CROSS_SCALE * (float(use_c) - top_use)


def _unit(v: Any) -> np.ndarray:
    x = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(x))
    return x / n if n > 0 else x


def rescore(cands: list[Candidate], query: str, query_x: Sequence[float], query_vector: Sequence[float],
            found: Sequence[dict[str, Any]], xvectors: dict[int, Any]) -> list[Candidate]:
    """Join the memories in another script found by `xvector` (rows with `_distance`, `vector` and
    `xvector`) and give every candidate in another script its placed score. `xvectors`: the cross vectors
    of the other candidates, by id. Dense ranks follow the new scores."""
    scripts = query_scripts(query)
    qx, qv = _unit(query_x), _unit(query_vector)
    known = {c.id: c for c in cands}
    use: dict[int, float] = {}
    for row in found:
        row = dict(row)
        row.pop("_distance", None)
        xv = row.pop(XVECTOR)
        vec = row.pop("vector", None)
        use[int(row["id"])] = float(_unit(xv) @ qx)
        if int(row["id"]) not in known and other_script(scripts, str(row.get("text") or "")):
            sim = float(_unit(vec) @ qv) if vec is not None else None
            known[int(row["id"])] = c = Candidate(row=row, similarity=sim, vector=vec)
            cands.append(c)
    for i, xv in xvectors.items():
        use.setdefault(i, float(_unit(xv) @ qx))
    cross = [c for c in cands if other_script(scripts, str(c.row.get("text") or "")) and c.id in use]
    own = [((c.similarity or 0.0) + c.hub, use[c.id]) for c in cands
           if c.similarity is not None and c.id in use and not other_script(scripts, str(c.row.get("text") or ""))]
    for c in cross:
        c.hub = placed(use[c.id], own) - (c.similarity or 0.0)
    for rank_, c in enumerate(sorted((c for c in cands if c.similarity is not None),
                                     key=lambda c: (-(c.similarity or 0.0) - c.hub, c.dense_rank or 0))):
        c.dense_rank = rank_
    return cands


def missing_ids(cands: Sequence[Candidate], found: Sequence[dict[str, Any]]) -> list[int]:
    """Candidates whose cross vector the `xvector` search did not return."""
    have = {int(r["id"]) for r in found}
    return [c.id for c in cands if c.id not in have]


def id_filter(ids: Sequence[int]) -> str:
    return F.in_("id", list(ids))


def stage(r: "Retriever", q: "Query", cands: list[Candidate]) -> list[Candidate]:
    """The stage itself (stages.py STAGES `crosslang`): one `xvector` search in the query's scope and
    partition, one read of the cross vectors it did not return, then `rescore`."""

    cross = getattr(r.store, "cross", None)  # a store object without the field's bookkeeping: as before
    if (cross is None or not cross.active or q.vector is None or q.mode == "bm25" or (q.mode == "hybrid" and r.params.fusion.startswith("milvus_"))
            or not query_scripts(q.text)):
        return cands
    try:
        qx = cross.embedder.encode([q.text], role="query")[0]
    except EmbeddingError as exc:
        log.warning("no cross-language stage: the query could not be embedded (%s)", exc)
        return cands
    fast = lite_scope(r.store, q.scope)  # milvus-lite: superseded rows dropped here, not by the filter
    rows = r.store.search_dense([qx], fast or q.scope, q.depth + (MARGIN if fast else 0), fields=[*MEMORY_FIELDS, "vector", XVECTOR],
                                partition=q.part, anns_field=XVECTOR)[0]
    rows = [row for row in rows if kept_row(row)][: q.depth] if fast else rows
    missing = missing_ids(cands, rows)
    xv = {int(row["id"]): row[XVECTOR] for row in r.store.query(id_filter(missing), fields=["id", XVECTOR], limit=len(missing))} if missing else {}
    return rescore(cands, q.text, qx, q.vector, rows, xv)
