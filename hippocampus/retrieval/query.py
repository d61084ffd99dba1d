"""What a stage is handed (stages.py): the one search's `Query`, and `Searcher`, what a stage may call of
the retriever that runs it (search.py `Retriever` is one).

Why a module of their own: the retriever imports the stages to run them, and the stages (and the
cross-language stage's helpers, crosslang.py) need these types; here below both, no import runs back up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from ..store import MilvusStore
from .fusion import Candidate

SearchMode = Literal["hybrid", "dense", "bm25"]
HybridFusion = Literal["weighted", "rrf", "milvus_rrf", "milvus_weighted"]


@dataclass
class Query:
    """What every stage may read of one search."""

    text: str
    vector: Sequence[float] | None
    mode: SearchMode
    scope: str
    part: str
    depth: int  # candidates gathered: the limit, or more when a later stage reorders
    use_context: bool
    include_superseded: bool
    now: int | None
    user_id: str = ""
    use_graph: bool = False
    include_expired: bool = False
    kind: str | None = None  # the memory type searched (its condition is in `scope`)
    kinds: tuple[str, ...] = ()  # every type the caller's one search asks for (crosslang shares work across them)
    memo: dict = field(default_factory=dict)  # shared by the kinds of one search (Retriever.search `memo`)
    plain: bool = False  # no caller filter: the scope is the user, kind, superseded and expiry conditions only


class Searcher(Protocol):
    """The retriever as a stage sees it: its store, its parameters and the reads it makes for the stages."""

    store: MilvusStore
    params: Any  # RetrievalParams (search.py): a class made from the stages' declarations (params.py)

    def dense(self, vector: Sequence[float], scope: str, limit: int, part: str | None = None) -> list[dict[str, Any]]: ...
    def bm25(self, query: str, scope: str, limit: int, part: str | None = None) -> list[Candidate]: ...
    def lexical(self, query: str, scope: str, limit: int, fields: Sequence[str], part: str | None) -> list[dict[str, Any]]: ...
    def milvus_hybrid(self, query: str, vector: Sequence[float], scope: str, limit: int,
                      part: str | None = None) -> list[Candidate]: ...
    def with_context(self, query: str, vector: Sequence[float], cands: list[Candidate], scope: str,
                     part: str | None) -> list[Candidate]: ...
    def probe_vectors(self) -> np.ndarray | None: ...
