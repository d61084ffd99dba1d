"""The stages a query walks, in order: `STAGES`. Each takes the retriever, the query and the candidates so
far and returns the candidates for the next; the retriever (search.py) runs them once per search.

Each stage declares what it owns beside it (`@declares`, collected in `SETTINGS`; params.py, after Graphiti's
`SearchConfig` recipes): its parameters (default and MemoryConfig fields), the other stages' parameters it
reads, and when it needs more candidates than the limit. `RetrievalParams` is made from these declarations
(one field per parameter), and its `from_config` and the candidate depth read them, so a new stage is its
function here (helpers in a module of their own) plus its MemoryConfig setting and its tests. Stages call
the retriever's public methods (`dense`, `bm25`, `lexical`, `milvus_hybrid`, `with_context`, `probe_vectors`),
named in query.py `Searcher`, which search.py `Retriever` satisfies; `Query` (what a stage reads of one search)
is there too."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..store import MEMORY_FIELDS
from ..store import filters as F
from . import crosslang as X
from .answer import ASK_WEIGHT, SLOT_WEIGHT
from .answer import apply as apply_answer
from .context import ContextParams
from .fusion import Candidate, FusionMethod, collect, fuse
from .graph import GraphParams, combine, cosine, entity_links, hop_links, triple_links
from .graph import apply as apply_graph
from .hubness import corrections, hub_scores
from .params import Param, Settings, built, setting
from .query import Query, Searcher
from .ranking import RankParams, diversify, rank
from .rows import current_row, lite_scope, live_row
from .subject import apply as apply_subject

Stage = Callable[[Searcher, Query, list[Candidate]], list[Candidate]]

SETTINGS: dict[str, Settings] = {}  # stage name -> what it owns (params.py), filled by `declares`


def declares(settings: Settings) -> Callable[[Stage], Stage]:
    """Record a stage's settings under its name (the stage itself is returned unchanged)."""
    def record(stage: Stage) -> Stage:
        SETTINGS[stage.__name__] = settings
        return stage
    return record


@declares(Settings(params={"mode": setting("search_mode", str, "hybrid"), "candidates": setting("search_candidates", int, 20)},
                   reads=("fusion", "bm25_weight", "hubness_weight")))  # Milvus's own fusion; vectors for hubness
def gather(r: Searcher, q: Query, _: list[Candidate]) -> list[Candidate]:
    """Candidates by mode: dense, BM25 (filled with the scope's newest when few share a word), both,
    or Milvus's own hybrid ranking (already scored)."""
    if q.mode == "bm25":
        return r.bm25(q.text, q.scope, q.depth, q.part)
    if q.mode == "dense":
        return collect(r.dense(q.vector, q.scope, q.depth, q.part), [])
    if r.params.fusion.startswith("milvus_"):
        return r.milvus_hybrid(q.text, q.vector, q.scope, q.depth, q.part)
    dense = r.dense(q.vector, q.scope, q.depth, q.part)
    lexical = r.lexical(q.text, q.scope, q.depth, [*MEMORY_FIELDS, "vector"], q.part)
    return collect(dense, lexical, q.vector)


@declares(Settings(params={"hubness_weight": setting("rank_hubness_weight", float, 0.5)}, reads=("fusion",),
                   reorders=lambda p, mode, use_context, use_graph: p.hubness_weight > 0))
def hubness(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """Lower the similarity of memories close to every query (retrieval/hubness.py); the dense
    ranks follow the corrected similarity. Not for BM25 alone nor Milvus's own hybrid ranking."""
    weight = r.params.hubness_weight
    scored = [c for c in cands if c.similarity is not None]
    if weight <= 0 or len(scored) < 2 or q.mode == "bm25" or (q.mode == "hybrid" and r.params.fusion.startswith("milvus_")):
        return cands
    probes = r.probe_vectors()
    if probes is None:
        return cands
    missing = [c.id for c in scored if c.vector is None]
    found = r.store.vectors(missing) if missing else {}  # every search path returns them; a safety net
    scored = [c for c in scored if c.vector is not None or c.id in found]
    hubs = hub_scores(np.asarray([c.vector if c.vector is not None else found[c.id] for c in scored], dtype=np.float32), probes)
    for c, gain in zip(scored, corrections(hubs, weight)):
        c.hub = gain
    for rank_, c in enumerate(sorted(scored, key=lambda c: (-(c.similarity or 0.0) - c.hub, c.dense_rank or 0))):
        c.dense_rank = rank_
    return cands


@declares(Settings(reads=("fusion",)))  # its own settings are the crosslang embedder's (retrieval/crosslang.py)
def crosslang(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """Memories in a script the query does not use, found and scored by the cross-language vector
    (retrieval/crosslang.py); only with `crosslang_embedder` set and a store that has the field."""
    return X.stage(r, q, cands)


@declares(Settings(params={"fusion": setting("hybrid_fusion", str, "weighted"),
                           "bm25_weight": setting("hybrid_bm25_weight", float, 0.1),
                           "script_aware": Param(True)},  # no setting: BM25 counts only within a script (fusion.py)
                   reorders=lambda p, mode, use_context, use_graph: mode == "hybrid"))
def fusion(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """One score per candidate: BM25's, the (corrected) similarity, or the weighted / RRF fusion of both."""
    if q.mode == "bm25":
        for c in cands:
            c.score = c.bm25 or 0.0
        return cands
    if q.mode == "dense":
        for c in cands:
            c.score = (c.similarity or 0.0) + c.hub
        return sorted(cands, key=lambda c: (-c.score, c.dense_rank if c.dense_rank is not None else 0))
    if r.params.fusion.startswith("milvus_"):
        return cands
    method: FusionMethod = "rrf" if r.params.fusion == "rrf" else "weighted"
    return fuse(cands, q.text, method, r.params.bm25_weight, script_aware=r.params.script_aware)


@declares(Settings(params={"subject_weight": setting("rank_subject_weight", float, 0.1)},
                   reorders=lambda p, mode, use_context, use_graph: p.subject_weight > 0))
def subject(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """A question about the user passes over memories only about someone else, and the reverse
    (retrieval/subject.py). Not for BM25 alone, whose scores are on another scale."""
    return cands if q.mode == "bm25" else apply_subject(cands, q.text, q.user_id, r.params.subject_weight)


@declares(Settings(params={"ask_weight": Param(ASK_WEIGHT), "slot_weight": Param(SLOT_WEIGHT)},  # no setting: answer.py
                   reorders=lambda p, mode, use_context, use_graph: p.ask_weight > 0 or p.slot_weight > 0))
def answer(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """Statements before questions, requests and remarks; a statement of the slot a question asks
    rises (retrieval/answer.py). Not for BM25 alone, whose scores are on another scale."""
    return cands if q.mode == "bm25" else apply_answer(cands, q.text, r.params.ask_weight, r.params.slot_weight, q.user_id)


@declares(Settings(params={"graph_on": setting("graph", lambda v: v == "on", False),  # a search may ask (`graph=`)
                           "graph": setting("rank_graph_weight", lambda v: GraphParams(weight=float(v)), GraphParams())},
                   reorders=lambda p, mode, use_context, use_graph: use_graph))
def graph(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """Memories linked to the query through the user's graph join or rise (retrieval/graph.py; with `graph: on`)."""
    g, p = r.store.graph, r.params.graph
    if not q.use_graph or q.vector is None or not g.exists():
        return cands
    memories = g.count(q.user_id, "memory")
    if not memories:
        return cands
    seeds = [c.id for c in cands[: p.seeds]]
    linked = combine({
        "triple": triple_links(g.search(q.user_id, q.vector, "triple", p.triples), p),
        "entity": entity_links(g.search(q.user_id, q.vector, "entity", p.entities), q.text, memories, p),
        "hop": hop_links(seeds, g.rows(q.user_id, "entity", extra=F.contains_any("supports", seeds)) if seeds else [], memories, p),
    })
    known = {c.id for c in cands}
    wanted = sorted((m for m in linked if m not in known), key=lambda m: -linked[m][0])[: p.max_new]
    joined = []
    if wanted:  # read within the search's scope: the user, the type, current facts only (milvus-lite: dropped here)
        rows = sorted(r.store.by_ids(wanted, [*MEMORY_FIELDS, "vector"], q.part, where=lite_scope(r.store, q.scope) or q.scope),
                      key=lambda rw: int(rw["id"]))  # by key; in id order, as the scan read them
        for row in (rw for rw in rows if (q.include_superseded or current_row(rw)) and (q.include_expired or live_row(rw))):
            vec = row.pop("vector")
            sim = cosine(q.vector, vec)
            joined.append(Candidate(row=row, similarity=sim, vector=vec, score=sim, parts={"similarity": sim}))
    return apply_graph(cands, linked, joined, p.weight)


@declares(Settings(params={"context": built(ContextParams.from_config, ContextParams(), "rank_neighbour_weight",
                                            "rank_chat_weight", "rank_who_weight", "rank_neighbour_window_seconds")},
                   reorders=lambda p, mode, use_context, use_graph: use_context))
def context(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """The best match's chat, a named who, and (opt-in) chat neighbours (retrieval/context.py)."""
    return r.with_context(q.text, q.vector, cands, q.scope, q.part) if q.use_context else cands


@declares(Settings())
def current(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """Facts a newer one superseded leave, and memories past a caller's `expires_at`, unless asked for (the
    filter's twin for servers without JSON exists)."""
    return [c for c in cands if (q.include_superseded or current_row(c.row)) and (q.include_expired or live_row(c.row))]


@declares(Settings(params={"rank": built(RankParams.from_config, RankParams(), "rank_recency_weight", "rank_half_life_days",
                                         "rank_hit_weight", "rank_importance_weight", "rank_mmr_weight")},
                   reorders=lambda p, mode, use_context, use_graph: p.rank.active))
def ranking(r: Searcher, q: Query, cands: list[Candidate]) -> list[Candidate]:
    """Recency, use and importance bonuses, then MMR diversity (retrieval/ranking.py; off by default)."""
    return diversify(rank(cands, r.params.rank, q.now), r.params.rank.mmr_weight, r.store.vectors)


STAGES: tuple[Stage, ...] = (gather, hubness, crosslang, fusion, subject, answer, graph, context, current, ranking)  # the order a query walks, once
