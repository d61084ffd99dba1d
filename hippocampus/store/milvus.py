"""MilvusStore: one collection for every memory (opened, written, read and searched here), companions for
their history (store/history.py), graph (store/graph.py) and cross-language vectors (store/xvector.py).
What they hold is in store/schema.py; opening and locking in store/connection.py; what the server can do
(full text, who assigns ids) in store/capabilities.py; the exact-scan fallback of a search in store/exact.py.
The same code runs on milvus-lite (a local path, the default) and on a Milvus server or cluster (an http://
URI). Filters come only from `filters.py`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import NotFound, SchemaMismatchError, StoreCorruptedError, StoreError
from ..models import ROW_FIELDS
from ..observability.tracing import store_call
from . import filters as F
from .backend import StoreClient, hybrid_kinds, keyed, refused
from .buckets import bucket_of, ensure_bucket, group_by_bucket
from .capabilities import Capabilities, detect, for_collection, warnings
from .connection import connect, ensure_collection, release
from .exact import exact_top_k
from .graph import GraphCollection, owners_of
from .history import HistoryCollection
from .ids import IdAllocator, LeasedWorker
from .leases import LeaseTable
from .leases_local import LocalLeases
from .readable import readable
from .schema import (
    PROP_FULL_TEXT,
    PROP_MODEL,
    PROP_VERSION,
    SCHEMA_VERSION,
    check_existing,
    memories_schema,
)
from .xvector import CrossVectors

log = logging.getLogger(__name__)

MEMORY_FIELDS = list(ROW_FIELDS)  # the columns MemoryRecord.to_row writes (models/record.py)
_PAGE = 1000


class MilvusStore:
    """Thin, typed access to the memories collection; knows nothing of processors."""

    def __init__(self, uri: str, dim: int, embedding_model: str, collection: str = "memories", token: str | None = None,
                 client_ids: bool | None = None, crosslang: Any = None):
        self.uri = uri
        self.dim = dim
        self.embedding_model = embedding_model
        self.collection = collection
        self.cross = CrossVectors(self, crosslang)  # the cross-language vectors' companion `<collection>_xvec`
        self.events = HistoryCollection(self)  # `<collection>_history`, every change to a memory (store/history.py)
        self.history_collection = self.events.name
        self._lock = threading.RLock()  # milvus-lite's in-process engine is not re-entrant
        self._buckets: set[str] = set()  # user-bucket partitions known to exist (store/buckets.py)
        self.graph = GraphCollection(self)  # `<collection>_graph`, made on first write (store/graph.py)
        # `<collection>_leases` on a shared server, made on first use; in memory on a local path (store/leases.py)
        self.leases: LeaseTable | LocalLeases = LeaseTable(self) if "://" in uri else LocalLeases()
        self._ids = IdAllocator(LeasedWorker(self.leases))  # used when hippocampus assigns ids (store/ids.py)
        self._client = connect(uri, token)
        try:
            self.capabilities: Capabilities = detect(self._client, uri)  # the server's; then the collection's
            if client_ids is not None:  # a new collection's id assignment chosen by the caller (tests, replicas)
                self.capabilities = replace(self.capabilities, client_ids=client_ids)
            self._ensure_memories()
            self.events.ensure()
        except Exception as exc:
            self.close()
            if not refused(exc):
                raise
            if "://" in uri:
                raise StoreError(f"cannot open the collections at {uri}: {exc}", uri=uri, original_error=exc) from exc
            raise StoreCorruptedError(
                f"the milvus-lite store at {uri} is damaged or unreadable ({exc}); "
                "restore it from a backup or choose another milvus_uri",
                uri=uri,
                original_error=exc,
            ) from exc

    # ---------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Release the client (for milvus-lite, with the last client of the path, its directory lock)."""
        if getattr(self, "_client", None) is not None and getattr(self, "leases", None) is not None:
            try:
                self.leases.close()  # the id worker number and any lease held go back at once
            except Exception:  # pragma: no cover - best effort: they expire
                log.debug("releasing leases failed", exc_info=True)
        client, self._client = getattr(self, "_client", None), None
        if client is None:
            return
        try:
            client.close()
        except Exception:  # pragma: no cover - best effort
            log.debug("close failed", exc_info=True)
        release(self.uri)

    @property
    def client(self) -> StoreClient:
        if self._client is None:
            raise StoreError("the store is closed", uri=self.uri)
        return self._client

    def _ensure_memories(self) -> None:
        c, server, found = self.client, self.capabilities, {}

        def make() -> tuple[Any, Any, dict[str, Any]]:
            schema, index = memories_schema(c, self.dim, server.full_text, auto_id=not server.client_ids)
            props = {PROP_MODEL: self.embedding_model, PROP_VERSION: SCHEMA_VERSION, **self.cross.new_props}
            props.update({} if server.full_text else {PROP_FULL_TEXT: "false"})
            return schema, index, {"properties": props, **server.create_kwargs()}

        def check() -> None:  # made before, or by another replica a moment ago: its schema and embedder must fit
            found["info"] = self._check_existing()

        ensure_collection(c, self.uri, self.collection, make, check)  # idempotent under races (connection.py)
        info = found.get("info")
        if info is not None:
            self.capabilities = for_collection(server, info)
        self.cross.opened(info, self.capabilities)
        self._buckets = set(c.list_partitions(self.collection))
        for line in warnings(server, self.capabilities, self.uri, self.collection, info):
            log.warning("%s", line)

    def _bucket_ready(self, name: str, create: bool) -> bool:
        """The user bucket exists (buckets.py `ensure_bucket`: made on first write, another process's seen)."""
        if name in self._buckets:
            return True
        with self._lock:
            return ensure_bucket(self._call, self.collection, self._buckets, name, create)

    def partition_for(self, user_id: str) -> str | None:
        """The partition holding this user's memories, to scan only it; None when that bucket does not
        exist yet, which means the user has no memories."""
        name = bucket_of(user_id)
        return name if self._bucket_ready(name, create=False) else None

    def _check_existing(self) -> dict[str, Any]:
        info = self.client.describe_collection(self.collection)
        check_existing(info, self.collection, self.uri, self.dim, self.embedding_model)
        return info

    def _create_collection(self, name: str, schema: Any = None, index_params: Any = None, **kwargs: Any) -> None:
        """Create a collection if it is missing, else index and load it: idempotent when several processes
        make it at once (connection.ensure_collection); on milvus-lite, what a process killed mid-creation
        left behind is cleared first."""
        ensure_collection(self.client, self.uri, name, lambda: (schema, index_params, kwargs))

    # ---------------------------------------------------------------- memories
    def _check_vectors(self, rows: Sequence[dict[str, Any]]) -> None:
        """Refuse a whole batch whose vectors do not fit the collection, before anything is written."""
        for row in rows:
            vec = row.get("vector")
            if vec is not None and len(vec) != self.dim:
                raise SchemaMismatchError(f"a {len(vec)}-d vector cannot go into {self.collection!r}, which holds "
                                          f"{self.dim}-d vectors from {self.embedding_model!r}", uri=self.uri)

    def cross_vectors(self, rows: Sequence[dict[str, Any]]) -> np.ndarray | None:
        """The rows' cross vectors when the store keeps them, else None: a writer embeds them before its lock."""
        return self.cross.encode(rows)

    def insert(self, rows: Sequence[dict[str, Any]], cross_vectors: np.ndarray | None = None) -> list[int]:
        if not rows:
            return []
        self._check_vectors(rows)
        xv = cross_vectors if cross_vectors is not None else self.cross_vectors(rows)
        rows = self.cross.inline(rows, xv)
        if self.capabilities.client_ids:
            rows = [{**row, "id": pk} for row, pk in zip(rows, self._ids.take(len(rows)))]  # store/ids.py
        ids = [0] * len(rows)
        with self._lock:  # one insert per user bucket (usually one: a batch of one user)
            for part, idx in group_by_bucket(rows).items():
                self._bucket_ready(part, create=True)
                res = self._call("insert", self.collection, data=[rows[i] for i in idx], partition_name=part)
                for i, pk in zip(idx, res["ids"]):
                    ids[i] = int(pk)
            self.cross.written(rows, ids, xv, fresh=True)  # ids just allocated: none is in the companion yet
        return ids

    def upsert(self, rows: Sequence[dict[str, Any]]) -> set[int]:
        """Rewrite existing rows in place; ids stay the same.

        A row whose id no longer exists (deleted or reset meanwhile) or belongs to another user is
        refused with NotFound and nothing is written: an update racing a delete must not bring an
        erased memory back. The check and the write happen under one lock, which holds within this
        process; on a shared server another process may remove a memory between the two, so the
        history is read after the write and a row it removed is deleted again. Returns those ids (their
        rewrite did not stand); empty when every row was written.
        """
        if not rows:
            return set()
        self._check_vectors(rows)
        ids = [int(r["id"]) for r in rows]
        with self._lock:
            found = self.by_ids(ids, ["id", "user_id", "text", "memory_type"])
            owner = {int(r["id"]): r["user_id"] for r in found}
            gone = [i for i, r in zip(ids, rows) if owner.get(i) != r.get("user_id")]
            if gone:
                raise NotFound(f"memories {gone} no longer exist for their user; nothing was rewritten")
            # the cross-language vector follows the text: a rewrite of metadata alone (mark_used, decay) keeps it
            was = {int(r["id"]): (r.get("text"), r.get("memory_type")) for r in found}
            fresh = [r for r in rows if self.cross.legacy or was[int(r["id"])] != (r.get("text"), r.get("memory_type"))]
            xv = self.cross.encode(fresh)
            rows = self.cross.inline(rows, xv)  # a version-4 collection: every row (fresh is all of them)
            for part, idx in group_by_bucket(rows).items():  # a row stays in its user's bucket
                self._bucket_ready(part, create=True)
                self._call("upsert", self.collection, data=[rows[i] for i in idx], partition_name=part)
            self.cross.written(fresh, [int(r["id"]) for r in fresh], xv)
            lost = self.events.removed(ids) if "://" in self.uri else set()  # a local store has one process
            if lost:
                self._call("delete", self.collection, filter=F.in_("id", sorted(lost)))
                self.cross.removed(sorted(lost))
                log.info("memories %s were removed by another process during their rewrite; left removed", sorted(lost))
        return lost

    def delete(self, filter_expr: str) -> int:
        if not filter_expr:
            raise StoreError("refusing to delete without a filter")
        gone = self.query(filter_expr, ["id", "user_id"]) if self.graph.exists() or self.cross.filled else []
        owners = owners_of(gone) if self.graph.exists() else {}
        with self._lock:
            res = self._call("delete", self.collection, filter=filter_expr)
            self.cross.removed([int(r["id"]) for r in gone])
        self.graph.cascade(owners)  # in the same operation: their ids leave the graph, unsupported rows go
        if isinstance(res, dict):
            return int(res.get("delete_count", 0))
        return len(res)

    def query(
        self, filter_expr: str, fields: Sequence[str] = MEMORY_FIELDS, limit: int | None = None, partition: str | None = None
    ) -> list[dict[str, Any]]:
        """Rows matching the filter; all of them when limit is None (paged, never capped).
        `partition` (from partition_for) restricts the scan to one user bucket."""
        if limit is not None:
            with self._lock:
                return readable(self._call("query", self.collection, filter=filter_expr, output_fields=list(fields), limit=limit, partition_names=_parts(partition)))
        return [row for page in self.iterate(filter_expr, fields, partition=partition) for row in page]

    def by_ids(self, ids: Sequence[int], fields: Sequence[str] = MEMORY_FIELDS, partition: str | None = None,
               where: str = "") -> list[dict[str, Any]]:
        """The rows with these ids (those that exist, each once) that match `where` (the rest of a condition:
        user, kind, state...), read by key on milvus-lite, where a filter `id in [...]` tests every row
        (backend.keyed)."""
        keys, out = list(dict.fromkeys(int(i) for i in ids)), []
        for start in range(0, len(keys), _PAGE):
            with self._lock:
                out += readable(self._call("query", self.collection, **keyed(self.client, keys[start:start + _PAGE], where),
                                           output_fields=list(fields), partition_names=_parts(partition)))
        return out

    def iterate(
        self, filter_expr: str, fields: Sequence[str] = MEMORY_FIELDS, batch: int = _PAGE, partition: str | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        """Pages of rows matching the filter, for memory-bounded scans (rows of a kind this version
        does not know left out: store/readable.py)."""
        with self._lock:
            it = self._call(
                "query_iterator", self.collection, batch_size=batch, filter=filter_expr, output_fields=list(fields),
                partition_names=_parts(partition),
            )
        try:
            while True:
                with self._lock:
                    page = it.next()
                if not page:
                    return
                yield readable(page)  # an empty page is not the end: a page of unknown kinds reads as none
        finally:
            it.close()

    def count(self, filter_expr: str = "", partition: str | None = None) -> int:
        with self._lock:
            res = self._call("query", self.collection, filter=filter_expr, output_fields=["count(*)"], partition_names=_parts(partition))
        return int(res[0]["count(*)"])

    def search_dense(
        self, vectors: Sequence[Sequence[float]], filter_expr: str, limit: int, fields: Sequence[str] = MEMORY_FIELDS,
        partition: str | None = None, anns_field: str = "vector",
    ) -> list[list[dict[str, Any]]]:
        """Nearest neighbours by cosine similarity; each hit carries `distance` (= similarity).
        `partition` (from partition_for) restricts the search to one user bucket; `anns_field` "xvector"
        searches the cross-language vectors (store/xvector.py)."""
        with self._lock:
            res = self._call(
                "search",
                self.collection,
                data=[list(map(float, v)) for v in vectors],
                anns_field=anns_field,
                filter=filter_expr,
                limit=limit,
                output_fields=list(fields),
                search_params={"metric_type": "COSINE"},
                partition_names=_parts(partition),
            )
        return [readable([_flatten(hit) for hit in hits]) for hits in res]

    def search_bm25(
        self, queries: Sequence[str], filter_expr: str, limit: int, fields: Sequence[str] = MEMORY_FIELDS,
        partition: str | None = None,
    ) -> list[list[dict[str, Any]]]:
        """Full-text BM25 over `text`; Milvus returns scores as negative distances, so never threshold them."""
        self.capabilities.require_full_text("search_bm25", self.uri)
        with self._lock:
            res = self._call("search", self.collection, data=list(queries), anns_field="sparse", filter=filter_expr,
                             limit=limit, output_fields=list(fields), search_params={"metric_type": "BM25"},
                             partition_names=_parts(partition))
        return [readable([_flatten(hit) for hit in hits]) for hits in res]

    def search_hybrid(
        self,
        vector: Sequence[float],
        query: str,
        filter_expr: str,
        limit: int,
        ranker: str = "rrf",
        weights: tuple[float, float] = (0.7, 0.3),
        candidates: int | None = None,
        fields: Sequence[str] = MEMORY_FIELDS,
        partition: str | None = None,
    ) -> list[dict[str, Any]]:
        """Milvus' own hybrid_search (dense + BM25, fused by RRFRanker or WeightedRanker).

        Kept for comparison and for Milvus servers; the retriever's default fusion is its own
        (retrieval/fusion.py), which measured better (docs/decisions.md, "Fusion"). `_distance` is the
        ranker's fused score."""
        self.capabilities.require_full_text("search_hybrid", self.uri)
        H = hybrid_kinds(self.client)  # a local store's own types: it never imports pymilvus
        depth = max(limit, candidates or limit)
        reqs = [
            H.AnnSearchRequest(data=[list(map(float, vector))], anns_field="vector", param={"metric_type": "COSINE"}, limit=depth, expr=filter_expr or None),
            H.AnnSearchRequest(data=[query], anns_field="sparse", param={"metric_type": "BM25"}, limit=depth, expr=filter_expr or None),
        ]
        fuse = H.RRFRanker(60) if ranker == "rrf" else H.WeightedRanker(*weights)
        with self._lock:
            res = self._call("hybrid_search", self.collection, reqs, ranker=fuse, limit=limit, output_fields=list(fields), partition_names=_parts(partition))
        return readable([_flatten(hit) for hit in res[0]])

    def search_exact(
        self, vector: Sequence[float], filter_expr: str, limit: int, fields: Sequence[str] = MEMORY_FIELDS,
        partition: str | None = None,
    ) -> list[dict[str, Any]]:
        """Exact cosine top-k over every row in the filter (store/exact.py): the safety net behind `search_dense`."""
        return exact_top_k(self, vector, filter_expr, limit, fields, partition)

    def vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        if not ids:
            return {}
        rows = self.by_ids(ids, ["id", "vector"])
        return {int(r["id"]): list(r["vector"]) for r in rows}

    # ---------------------------------------------------------------- history (store/history.py)
    def add_history(self, events: Sequence[dict[str, Any]]) -> list[int]:
        """Store history events; their new event ids, in order (what a failed delete takes back)."""
        return self.events.add(events)

    def history(self, filter_expr: str) -> list[dict[str, Any]]:
        """Events matching the filter, oldest first, each with its own `event_id` (the row's primary key)."""
        return self.events.read(filter_expr)

    def history_event(self, event_id: int) -> dict[str, Any] | None:
        """One event by its own id, or None."""
        return self.events.by_id(event_id)

    def delete_history(self, filter_expr: str) -> int:
        return self.events.delete(filter_expr)

    # ---------------------------------------------------------------- helpers
    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(self.client, method)
        try:
            return store_call(fn, method, *args, **kwargs)  # a span inside a traced verb
        except Exception as exc:
            if not refused(exc):
                raise
            raise StoreError(f"Milvus {method} failed: {exc}", uri=self.uri, original_error=exc) from exc

    def __enter__(self) -> MilvusStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parts(partition: str | None) -> list[str] | None:
    return [partition] if partition else None


def _flatten(hit: Any) -> dict[str, Any]:
    entity = dict(hit.get("entity") or {})
    entity.setdefault("id", hit.get("id"))
    entity["_distance"] = float(hit.get("distance", 0.0))
    return entity
