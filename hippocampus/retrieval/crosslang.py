"""The cross-language stage: memories in a script the query does not use are scored by the second
embedder (embeddings/crosslang.py), calibrated onto e5's scale (issue 35, docs/crosslang.md).

Why: with e5-small an English memory sits below every Chinese one for a Chinese question, often
outside the 20 candidates. USE multilingual v3 was trained on translation pairs and finds them, but
it is weaker than e5 within one language. So the stage gathers the memories nearest the query by USE
among those written in another script (store/xvector.py `nearest`), and gives every candidate in
another script the dense score

    dense(top) + CROSS_SCALE * (use(c) - max(use(o) for o in the 3 best own-script candidates))

in place of e5's (similarity + hubness), where top is the best own-script candidate, dense() e5's score
with the hubness correction and use() the USE cosine: a memory in the other language goes above the
query's best own-language memory exactly when USE prefers it to each of the best three, and below by
how much less USE likes it. Why relative: e5's scale moves with the query's language (a Chinese
question scores every Chinese memory higher than an English one scores its English memories), so a fixed
map of USE onto e5 lost zh->en questions on the tune half (docs/crosslang.md). Why three and not the best alone: an own
candidate that e5 ranks first but USE dislikes (another memory than the one asked about) let every
other-language memory USE liked better pass the right answer ("Where do I live?" answered by "I work at a
bank" in Chinese, tests/retrieval/test_everyday_questions.py); on the tune half 1, 3 and 5 find the same.
The dense score goes into `Candidate.hub`, so the raw e5 cosine stays in `similarity` and every later
stage reads the dense score as before. Candidates in the query's own script keep e5's score, so a
single-script store (LoCoMo) or a question in both scripts never meets this stage, and pays nothing.

CROSS_SCALE was chosen on the tune half of tests/data/crosslang_pairs.jsonl only, never on the held-out
half (`python scripts/eval.py crosslang`, docs/crosslang.md): 0.1 is the largest scale that keeps every
same-language control.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ..store import MEMORY_FIELDS
from ..store import filters as F
from ..text import script_of
from .fusion import Candidate, query_scripts
from .query import Query, Searcher
from .rows import MARGIN, current_row, kept_row, lite_scope, live_row

log = logging.getLogger(__name__)

CROSS_SCALE = 0.1
ANCHORS = 3  # own-script candidates whose best USE cosine a memory in another script must beat (see above)
SCRIPTS = frozenset({"han", "latin"})  # the scripts text.script_of tells apart


def other_script(scripts: set[str], text: str) -> bool:
    """The memory is written in a script (han or latin) that the query does not use."""
    s = script_of(text)
    return bool(scripts) and s != "other" and s not in scripts


def placed(use_c: float, own: Sequence[tuple[float, float]]) -> float:
    """The dense score of a memory in another script with USE cosine `use_c`, against `own`, the query's
    best own-script candidates by dense score ((dense score, USE cosine) each, best first):
    `dense(best) + CROSS_SCALE * (use_c - max use)`, the max over the first ANCHORS of them, so it goes
    above the best one exactly when USE prefers it to each of them. Its USE cosine alone without any."""
    top = list(own)[:ANCHORS]
    if not top:
        return float(use_c)
    return top[0][0] + CROSS_SCALE * (float(use_c) - max(u for _, u in top))


def _unit(v: Any) -> np.ndarray:
    x = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(x))
    return x / n if n > 0 else x


def rescore(cands: list[Candidate], query: str, query_vector: Sequence[float], found: Sequence[dict[str, Any]],
            uses_of: Callable[[list[Candidate]], dict[int, float]], floor: float | None = None,
            near: dict[int, float] | None = None) -> list[Candidate]:
    """Join the memories in another script found by their cross vectors (rows with `_distance`, the USE
    cosine, and `vector`) and give every candidate in another script its placed score. `uses_of(cands)`: the
    USE cosines of the query's own-script candidates; `near`: the USE cosines the gathering found for
    candidates already here (their rows were not read again). A candidate in another script that the
    gathering did not return gets `floor`, the lowest cosine it returned: the most it can have, since it
    returns the nearest first. Dense ranks follow the new scores."""
    scripts = query_scripts(query)
    qv = _unit(query_vector)
    known = {c.id: c for c in cands}
    use: dict[int, float] = {i: u for i, u in (near or {}).items() if i in known}
    side: dict[int, bool] = {}  # each candidate's script read once: two regex scans of its text

    def other(c: Candidate) -> bool:
        if c.id not in side:
            side[c.id] = other_script(scripts, str(c.row.get("text") or ""))
        return side[c.id]

    for row in found:
        row = dict(row)
        use[int(row["id"])] = float(row.pop("_distance"))
        vec = row.pop("vector", None)
        if int(row["id"]) not in known and other_script(scripts, str(row.get("text") or "")):
            sim = float(_unit(vec) @ qv) if vec is not None else None
            known[int(row["id"])] = c = Candidate(row=row, similarity=sim, vector=vec)
            side[c.id] = True
            cands.append(c)
    cross = [c for c in cands if other(c)]
    mine = [c for c in cands if c.similarity is not None and not other(c)]
    if not cross:
        return cands
    own_use = uses_of(mine) if mine else {}
    own = sorted(((c.similarity or 0.0) + c.hub, own_use[c.id]) for c in mine if c.id in own_use)[::-1]
    for c in cross:
        u = use.get(c.id, floor)
        if u is not None:
            c.hub = placed(u, own) - (c.similarity or 0.0)
    for rank_, c in enumerate(sorted((c for c in cands if c.similarity is not None),
                                     key=lambda c: (-(c.similarity or 0.0) - c.hub, c.dense_rank or 0))):
        c.dense_rank = rank_
    return cands


def kinds_scope(q: Query) -> tuple[str, int]:
    """The scope and depth of the one cross-language gathering a Memory.search shares across the kinds it
    asks for (each kind's stage keeps its own rows): the kind's condition widened to all of them, the depth
    times their number, so the cost is paid once per search, not once per kind."""
    if q.kind is None or len(q.kinds) < 2 or F.eq("memory_type", q.kind) not in q.scope:
        return q.scope, q.depth
    return q.scope.replace(F.eq("memory_type", q.kind), F.in_("memory_type", list(q.kinds)), 1), q.depth * len(q.kinds)


def gather(r: Searcher, q: Query, qx: Sequence[float], scripts: Sequence[str],
            known: set[int]) -> tuple[list[dict[str, Any]], float | None, dict[int, float]]:
    """The memories in `scripts` nearest the query by cross vector (store/xvector.py `nearest`), read in
    the scope: rows with `_distance` (the USE cosine), the lowest cosine `nearest` returned (`floor`), and
    every cosine it returned. Rows of `known` memories (already candidates, so in the scope) are not read
    again: e5 often gathers the other language's memories itself, and a read costs per id (issue 41);
    they keep their place in the `depth` nearest. The rows are read by key (MilvusStore.by_ids): without
    caller filters by id alone, the scope's own conditions (user, kinds, superseded, expired) checked here;
    with them, the scope goes beside the ids as the rest of the condition (`where`)."""
    scope, depth = kinds_scope(q)
    kinds = list(q.kinds) if len(q.kinds) > 1 else ([q.kind] if q.kind else None)
    near = dict(r.store.cross.nearest(q.user_id, qx, kinds, scripts, depth + MARGIN))
    if not near:
        return [], None, near
    fields = [*MEMORY_FIELDS, "vector"]
    unread = [i for i in near if i not in known]
    if not unread:
        rows = []
    elif q.plain:
        rows = [row for row in r.store.by_ids(unread, fields)
                if row.get("user_id") == q.user_id and (kinds is None or row.get("memory_type") in kinds)
                and (q.include_superseded or current_row(row)) and (q.include_expired or live_row(row))]
    else:
        fast = lite_scope(r.store, scope)  # milvus-lite: superseded rows dropped here, not by the filter
        rows = r.store.by_ids(unread, fields, q.part, where=fast or scope)
        rows = [row for row in rows if not fast or kept_row(row)]
    ranked = sorted([*({"id": i, "_distance": near[i], "_known": True} for i in near if i in known),
                     *({**row, "_distance": near[int(row["id"])]} for row in rows)], key=lambda row: -row["_distance"])
    return [row for row in ranked[:depth] if not row.get("_known")], min(near.values()), near


def stage(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """The stage itself (stages.py STAGES `crosslang`): the query's USE vector and the gathering, both
    shared by the kinds of one Memory.search (`Query.memo`), then `rescore`."""

    cross = getattr(r.store, "cross", None)  # a store object without the companion's bookkeeping: as before
    if (cross is None or not cross.active or q.vector is None or q.mode == "bm25" or (q.mode == "hybrid" and r.params.fusion.startswith("milvus_"))
            or not query_scripts(q.text) or not (wanted := sorted(SCRIPTS - query_scripts(q.text)))):
        return cands
    key = ("crosslang", q.text, q.kinds or q.kind)  # the memo lives for one Memory.search: only the kind varies
    if key not in q.memo:
        # nothing to gather (the user has no memory in another script): no query embedding, and a model not
        # loaded yet stays unloaded; asked of Milvus only then, free once the user's vectors are in memory
        if not cross.holds(q.user_id, wanted, ask=not getattr(cross.embedder, "loaded", True)):
            q.memo[key] = None
            return cands
        try:
            qx = cross.embedder.encode([q.text], role="query")[0]
        except EmbeddingError as exc:
            log.warning("no cross-language stage: the query could not be embedded (%s)", exc)
            return cands
        q.memo[key] = (qx, *gather(r, q, qx, wanted, {c.id for c in cands}))
    if q.memo[key] is None:
        return cands
    qx, rows, floor, near = q.memo[key]
    mine = [row for row in rows if q.kind is None or row.get("memory_type") == q.kind]

    def uses_of(own: list[Candidate]) -> dict[int, float]:
        return cross.cosines(q.user_id, [c.id for c in own], qx)

    return rescore(cands, q.text, q.vector, mine, uses_of, floor, near)
