"""Finds a user's memories for a query: dense, BM25 or hybrid, then the context stage (the best
match's chat, a named who and, opt-in, chat neighbours: retrieval/context.py) and the ranking stage.

The facade decides what to do with the hits. Three guarantees hold in every mode:
- the result holds min(limit, memories in scope) hits: when the index returns fewer while more
  rows match (an approximate index under a selective filter, BM25 finding no shared word), the
  retriever falls back to an exact scan (dense) or fills up with the scope's other memories (BM25);
- BM25 scores are used only relatively (Milvus returns them negated), never thresholded;
- with no working embedder (EmbeddingError), search degrades to BM25 and logs it.
On a server without full-text search (store/capabilities.py) hybrid and bm25 run dense, and with
no working embedder either the scope's newest memories are returned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..embeddings import Embedder
from ..embeddings.fixed import fixed_vectors
from ..errors import EmbeddingError, InvalidInput
from ..models import MemoryRecord, MemoryType, SearchHit, now_ts
from ..store import MEMORY_FIELDS, MilvusStore, expiry
from ..store import filters as F
from ..store.filter_check import checked_filter
from . import stages
from .context import apply_context, in_context, neighbours, windows
from .fusion import Candidate, collect
from .hubness import PROBES
from .params import built, params_class
from .query import Query, SearchMode
from .rows import MARGIN, kept_row, lite_scope

log = logging.getLogger(__name__)


def check_search_mode(mode: Any) -> SearchMode:
    """A per-call search mode, refused with InvalidInput unless hybrid, dense or bm25."""
    if mode not in ("hybrid", "dense", "bm25"):
        raise InvalidInput(f"unknown search mode {mode!r}; use 'hybrid', 'dense' or 'bm25'")
    return mode


# The search's parameters: one field per parameter a stage declares (stages.py `@declares`, params.py),
# plus the project's own category names (MemoryConfig.categories), which the caller's filters may name.
RetrievalParams = params_class("RetrievalParams", stages.SETTINGS, {"categories": built(
    lambda config: tuple(spec.name for spec in getattr(config, "categories", ())), (), "categories")}, __name__)


class Retriever:
    """Dense, BM25 and hybrid search scoped by user and optionally by type and metadata."""

    def __init__(self, store: MilvusStore, embedder: Embedder, params: RetrievalParams | None = None):
        self.store = store
        self.embedder = embedder
        self.params = params or RetrievalParams()
        self._probes: np.ndarray | None = None
        self._counts: dict[tuple[str, str | None], tuple[int, int]] = {}  # see `_count`

    def scope(self, user_id: str, memory_type: MemoryType | None = None, metadata: dict[str, Any] | F.CallerFilter | None = None,
              include_superseded: bool = False, include_expired: bool = True) -> str:
        """The filter of a search: the user, the kind, the caller's filters (store/filters.py
        `caller_filter`), and (unless asked for) no memory that a newer fact superseded (a store whose
        server lacks JSON `exists` filters those after retrieval instead: `current_row`)."""
        parts = [F.eq("user_id", user_id)]
        if not include_superseded and self.store.capabilities.json_exists:
            parts.append(F.json_missing("metadata", "life", "superseded_by"))
        if memory_type is not None:
            parts.append(F.eq("memory_type", memory_type.value))
        caller = metadata if isinstance(metadata, F.CallerFilter) else F.caller_filter(metadata)
        parts.append(caller.expr)
        if not include_expired and self.store.capabilities.json_exists:  # last: lite_scope finds it there
            parts.append(expiry.live(now_ts()))
        return F.and_(*parts)

    def caller_filter(self, user_id: str, filters: dict[str, Any] | None) -> F.CallerFilter:
        """The caller's filters compiled once per search, bare keys checked (store/filter_check.py)."""
        return checked_filter(self.store, user_id, filters, self.params.categories)

    def encode_query(self, query: str, mode: SearchMode | None = None) -> Sequence[float] | None:
        """The query's vector, or None when BM25 alone will serve (bm25 mode, or the embedder failed)."""
        if self.store.capabilities.serve(mode or self.params.mode) == "bm25":
            return None
        try:
            return self.embedder.encode([query], role="query")[0]
        except EmbeddingError as exc:
            fallback = "BM25 search" if self.store.capabilities.full_text else "the newest memories (no full-text search)"
            log.warning("query embedding failed (%s); falling back to %s", exc, fallback)
            return None

    def search(
        self,
        query: str,
        user_id: str,
        limit: int,
        memory_type: MemoryType | None = None,
        metadata: dict[str, Any] | F.CallerFilter | None = None,
        query_vector: Sequence[float] | None = None,
        mode: SearchMode | None = None,
        now: int | None = None,
        include_superseded: bool = False,
        graph: bool | None = None,
        include_expired: bool = False,
        kinds: Sequence[str] = (),
        memo: dict | None = None,
    ) -> list[SearchHit]:
        """Up to `limit` hits, best first: the query walks STAGES once. Pass `query_vector` to reuse
        one embedding across calls; without it the query is embedded here (or BM25 serves if that fails).
        `graph` asks for the graph stage or not (None: the config's `graph`). A caller that searches
        several kinds for one question passes them all as `kinds` and one `memo` dict to every call, so
        work that does not depend on the kind (the cross-language search) is done once."""
        caller = metadata if isinstance(metadata, F.CallerFilter) else self.caller_filter(user_id, metadata)
        include_superseded = include_superseded or caller.wants_superseded  # filters={"state": "superseded"}
        if limit <= 0:
            return []
        mode = mode or self.params.mode
        if query_vector is None and mode != "bm25":
            query_vector = self.encode_query(query, mode)
        # without full text (store/capabilities.py) hybrid and bm25 run dense; with no vector either, the newest serve
        mode = self.store.capabilities.serve(mode) if query_vector is not None else "bm25"
        part = self.store.partition_for(user_id)  # the user's bucket: scan only it (store/buckets.py)
        if part is None:
            return []  # no bucket yet: this user has no memories
        use_context = self.params.context.active and query_vector is not None and mode != "bm25"
        use_graph = (self.params.graph_on if graph is None else bool(graph)) and self.params.graph.active and query_vector is not None
        reorder = self.params.reorders(mode, use_context, use_graph)
        q = Query(text=query, vector=query_vector, mode=mode, scope=self.scope(user_id, memory_type, caller, include_superseded, include_expired),
                  part=part, depth=max(limit, self.params.candidates) if reorder else limit, use_context=use_context,
                  include_superseded=include_superseded, now=now, user_id=user_id, use_graph=use_graph,
                  include_expired=include_expired, kind=memory_type.value if memory_type is not None else None,
                  kinds=tuple(kinds), memo=memo if memo is not None else {}, plain=not caller.expr)
        cands: list[Candidate] = []
        for stage in stages.STAGES:  # read at call time: scripts/eval_crosslang.py traces them
            cands = stage(self, q, cands)
        return [_hit(c) for c in cands[:limit]]

    def probe_vectors(self) -> np.ndarray | None:
        """The hubness stage's probe questions, embedded once (None when the embedder fails)."""
        if self._probes is None:
            try:
                self._probes = fixed_vectors(self.embedder, PROBES, role="query")  # once per machine where it may
            except EmbeddingError as exc:
                log.warning("no hubness correction: the probe questions could not be embedded (%s)", exc)
                return None
        return self._probes

    # ------------------------------------------------------------------ what the stages call (stages.py)
    def dense(self, vector: Sequence[float], scope: str, limit: int, part: str | None = None) -> list[dict[str, Any]]:
        """The nearest `limit` rows in the scope (with their vectors when the hubness stage is on); an exact
        scan when the index returns fewer while more match."""
        fields = [*MEMORY_FIELDS, "vector"] if self.params.hubness_weight > 0 else MEMORY_FIELDS  # the hubness stage reads them
        fast = lite_scope(self.store, scope)
        if fast is not None:  # milvus-lite: superseded memories dropped here, not by the filter (lite_scope)
            rows = self.store.search_dense([vector], fast, limit + MARGIN, fields=fields, partition=part)[0]
            kept = [r for r in rows if kept_row(r)]
            if len(kept) >= limit or (len(rows) < limit + MARGIN and self._count(fast, part) == len(rows)):
                return kept[:limit]  # exact: the top `limit` current rows, or every current row there is
        rows = self.store.search_dense([vector], scope, limit, fields=fields, partition=part)[0]
        if len(rows) < limit and self.store.count(scope, partition=part) > len(rows):
            log.info("dense index returned %d of %d wanted while more match; using the exact scan", len(rows), limit)
            rows = self.store.search_exact(vector, scope, limit, fields=fields, partition=part)
        return rows

    def _count(self, scope: str, part: str | None) -> int:
        """The scope's row count, to tell a short answer of milvus-lite's index (HNSW under a filter may
        miss rows) from a scope that has no more. On a local path this process is the store's only
        writer (the directory lock), so a count is kept until the store's next write (`cross.writes`
        counts every insert, upsert and delete): a kind a user has no memories of was counted on every
        search, a slow scan of unflushed rows (issue 41), now once per write."""
        clock = getattr(getattr(self.store, "cross", None), "writes", None)
        if clock is None or "://" in str(getattr(self.store, "uri", "://")):
            return self.store.count(scope, partition=part)
        key = (scope, part)
        got = self._counts.get(key)
        if got is not None and got[1] == clock:
            return got[0]
        if len(self._counts) > 4096:  # many users between two writes: forget the oldest half
            for old in list(self._counts)[:2048]:
                self._counts.pop(old, None)  # another thread may have dropped it
        n = self.store.count(scope, partition=part)
        self._counts[key] = (n, clock)
        return n

    def bm25(self, query: str, scope: str, limit: int, part: str | None = None) -> list[Candidate]:
        """BM25's candidates, scored, filled up to `limit` with the scope's newest when few share a word."""
        rows = self.lexical(query, scope, limit, MEMORY_FIELDS, part) if self.store.capabilities.full_text else []
        cands = collect([], rows)
        for c in cands:
            c.score = c.bm25 or 0.0
        if len(cands) < limit:
            seen, fast = {c.id for c in cands}, lite_scope(self.store, scope)  # milvus-lite: no JSON filter (lite_scope)
            extra = self.store.query(fast or scope, limit=limit + len(seen) + (MARGIN if fast else 0), partition=part)
            extra = [r for r in extra if int(r["id"]) not in seen and (not fast or kept_row(r))]
            extra.sort(key=lambda r: (-int(r.get("ts", 0)), int(r["id"])))  # no shared word: newest first
            cands += [Candidate(row=r, bm25=0.0, score=0.0) for r in extra[: limit - len(cands)]]
        return cands

    def lexical(self, query: str, scope: str, limit: int, fields: Sequence[str], part: str | None) -> list[dict[str, Any]]:
        """BM25's top `limit` in the scope. Milvus returns only rows sharing a word with the query, so a
        short answer holds all of them: with superseded rows dropped here (lite_scope), it is exact
        when it keeps `limit` rows or when the unfiltered answer was short."""
        fast = lite_scope(self.store, scope)
        if fast is not None:
            rows = self.store.search_bm25([query], fast, limit + MARGIN, fields=fields, partition=part)[0]
            kept = [r for r in rows if kept_row(r)]
            if len(kept) >= limit or len(rows) < limit + MARGIN:
                return kept[:limit]
        return self.store.search_bm25([query], scope, limit, fields=fields, partition=part)[0]

    def milvus_hybrid(self, query: str, vector: Sequence[float], scope: str, limit: int, part: str | None = None) -> list[Candidate]:
        """Milvus's own hybrid ranking (`hybrid_fusion: milvus_*`), filled from the exact dense ranking."""
        ranker = "rrf" if self.params.fusion == "milvus_rrf" else "weighted"
        weights = (1.0 - self.params.bm25_weight, self.params.bm25_weight)
        rows = self.store.search_hybrid(vector, query, scope, limit, ranker=ranker, weights=weights, partition=part)
        cands = [Candidate(row={k: v for k, v in r.items() if k != "_distance"}, score=float(r["_distance"])) for r in rows]
        if len(cands) < limit:  # fill from the exact dense ranking
            seen = {c.id for c in cands}
            for c in collect(self.dense(vector, scope, limit, part), []):
                if c.id not in seen and len(cands) < limit:
                    c.score = min((x.score for x in cands), default=0.0) - 1e-9
                    cands.append(c)
        return cands

    def with_context(
        self, query: str, vector: Sequence[float], cands: list[Candidate], scope: str, part: str | None
    ) -> list[Candidate]:
        """The context stage (retrieval/context.py). An exact query reads the memories in the time
        windows around the candidates, to find each one's chat neighbours; the neighbours that are
        not candidates are scored by their cosine (their vectors in a second call). Not a filtered
        vector search: milvus-lite's index returned only part of the rows matching such a filter."""
        params = self.params.context
        targets = [c.row for c in cands if in_context(c.row)]
        near: dict[int, list[int]] = {}
        outside: dict[int, tuple[float, str]] = {}
        if targets and params.needs_neighbours:
            chats = F.or_(*(
                F.and_(F.eq("chat_id", chat), F.cmp("ts", ">=", lo), F.cmp("ts", "<=", hi))
                for chat, lo, hi in windows(targets, params.window_seconds)
            ))
            fast = lite_scope(self.store, scope)  # milvus-lite: superseded rows dropped here, not by the filter
            rows = self.store.query(
                F.and_(fast or scope, F.eq("memory_type", "episodic"), chats),
                fields=["id", "chat_id", "ts", "who", *(["metadata"] if fast else [])], limit=_NEIGHBOUR_ROWS, partition=part,
            )
            if len(rows) >= _NEIGHBOUR_ROWS:  # cut off: a farther turn could pass for a neighbour
                log.info("more than %d memories around the candidates; no neighbour bonus this time", _NEIGHBOUR_ROWS)
                rows = []
            rows = [r for r in rows if kept_row(r)] if fast else rows
            near = neighbours(targets, rows, params.window_seconds)
            known = {c.id for c in cands}
            missing = sorted({j for ids in near.values() for j in ids} - known)
            if missing:
                whos = {int(r["id"]): str(r.get("who") or "") for r in rows}
                q = np.asarray(vector, dtype=np.float32)
                q = q / (float(np.linalg.norm(q)) or 1.0)
                for j, vec in self.store.vectors(missing).items():
                    v = np.asarray(vec, dtype=np.float32)
                    outside[j] = (float(v @ q) / (float(np.linalg.norm(v)) or 1.0), whos.get(j, ""))
        return apply_context(cands, query, params, near, outside)


# Milvus caps a query at 16,384 rows (20 windows of +-10 minutes hold far fewer).
_NEIGHBOUR_ROWS = 16384


def _hit(c: Candidate) -> SearchHit:
    record = MemoryRecord.from_row(c.row)
    signals = {k: round(float(v), 6) for k, v in {**c.parts, "hubness": c.hub}.items()}
    signals.update({k: float(v) for k, v in (("dense_rank", c.dense_rank), ("bm25_rank", c.bm25_rank), ("bm25", c.bm25))
                    if v is not None})
    return SearchHit(memory=record, score=float(c.score), similarity=c.similarity, signals=signals)
