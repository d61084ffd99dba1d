"""The graph service: build a user's graph now, and read it (the CLI's `hippocampus graph`, the UI).
The facade delegates its graph verbs here; the work is in graph/build.py and store/graph.py."""

from __future__ import annotations

from typing import Any

from .. import validation as V
from ..context import MemoryContext
from ..contract.replies import GraphEntityView, GraphStats, GraphTripleView, GraphView
from .build import build

ORDER = "mentions"  # entities most supported first: what the user's memories are mostly about


class GraphService:
    """The graph verbs over a MemoryContext."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def build_graph(self, user_id: str | None = None, progress: Any = None) -> GraphStats:
        """Read the memories the extractor has not read yet (of `user_id`, else of every user) into the graph.
        Memory.build_graph documents the arguments and errors."""
        from ..processors.triple_extractor import TripleExtractor

        user_id = V.check_id("user_id", user_id) if user_id is not None else None
        return build(self.ctx.store, self.ctx.embedder, self.ctx.processor(TripleExtractor), user_id, progress)

    def graph(self, user_id: str, limit: int | None = None) -> GraphView:
        """`user_id`'s entities and triples as built so far, at most `limit` of each (all when None).
        Memory.graph documents the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        limit = V.check_limit(limit) if limit is not None else None
        rows = self.ctx.store.graph.rows(user_id)
        entities = sorted((r for r in rows if r["kind"] == "entity"), key=lambda r: (-len(r["supports"]), r["name"].casefold()))
        triples = sorted((r for r in rows if r["kind"] == "triple"), key=lambda r: (-len(r["supports"]), r["name"].casefold()))
        return GraphView(
            user_id=user_id,
            memories_read=sum(1 for r in rows if r["kind"] == "memory"),
            entities=[GraphEntityView(name=r["name"], type=r["etype"], memory_ids=r["supports"], first_seen=r["first_seen"],
                                      last_seen=r["last_seen"]) for r in entities[:limit]],
            triples=[GraphTripleView(subject=r["subject"], predicate=r["predicate"], object=r["object"], negated=r["negated"],
                                     frequency=r["frequency"], condition=r["condition"], memory_ids=r["supports"],
                                     first_seen=r["first_seen"], last_seen=r["last_seen"]) for r in triples[:limit]],
        )
