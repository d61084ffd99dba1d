"""A local store's client: the pymilvus `MilvusClient` methods the store calls, with the same arguments and
results, answered by milvus-lite's documented in-process API (`milvus_lite.MilvusLite`, `Collection`).

Why: pymilvus reaches milvus-lite 3 (a Python engine) through a gRPC server in the same process: every row
encoded, sent over a socket and decoded twice, a loopback port, pymilvus and grpc imported. Here the store
calls the engine. The Milvus-server path keeps pymilvus' client; both are held to the same contract tests
(tests/store/test_lite_client.py, test_store_servers.py). Each call follows milvus-lite's own gRPC servicer
(a delete or count by filter is a query first; a query iterator pages by primary key; hybrid search fuses
as its server does). Not mapped, since the store never asks: databases, aliases, group-by, range search,
search iterators. docs/store-local.md has the design and its measurements."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from milvus_lite import Collection, CollectionNotFoundError, DataType, FunctionType, MilvusLite, __version__
from milvus_lite import Function as LiteFunction

from . import filters as F
from .backend import BackendError, Kinds
from .lite_ranking import HYBRID, fusion
from .lite_schema import Decoder, IndexParams, LiteSchema, describe, float32

T = TypeVar("T")
_COUNT = "count(*)"


def _refusals(fn: Callable[..., T]) -> Callable[..., T]:
    """Whatever the engine raises as BackendError (what the store catches), its message kept: milvus-lite's
    server answers every exception of a call with an error status, which pymilvus raises as MilvusException."""

    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}") from exc

    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


class LiteClient:
    """pymilvus' MilvusClient surface for one milvus-lite directory, opened in this process.

    milvus-lite allows one `MilvusLite` per directory and process (its flock): the clients of one path share
    it, the first opening it (`DataDirLockedError` when another process holds the lock) and the last
    `close()` closing it, which releases the lock. Calls are serialised: the engine is not re-entrant."""

    kinds = Kinds(DataType, LiteFunction, FunctionType)  # what store/schema.py builds a schema with (backend.kinds)
    hybrid = HYBRID  # the request and ranker types its hybrid_search takes, pymilvus' shapes (backend.hybrid_kinds)
    reads_keys_with_filter = True  # query(ids=, filter=) reads by key, then tests the filter (backend.keyed)

    def __init__(self, path: str) -> None:
        self.path = path
        self._db, self._lock = _open(path)
        self._closed = False
        self._decoders: dict[str, tuple[Collection, Decoder]] = {}

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """This client's share of the engine given back; the engine closes with the last."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _release(self.path)

    @property
    def closed(self) -> bool:
        return self._closed

    def get_server_version(self) -> str:
        return f"milvus_lite-{__version__}"

    # ------------------------------------------------------------ schema
    @staticmethod
    def create_schema(auto_id: bool = False, enable_dynamic_field: bool = False, **_: Any) -> LiteSchema:
        return LiteSchema(auto_id=auto_id, enable_dynamic_field=enable_dynamic_field)

    @staticmethod
    def prepare_index_params() -> IndexParams:
        return IndexParams()

    def _col(self, name: str) -> Collection:
        if self._closed:
            raise BackendError(f"the milvus-lite client of {self.path} is closed")
        try:
            return self._db.get_collection(name)
        except CollectionNotFoundError as exc:
            raise BackendError(f"collection not found[collection={name}]", code=100) from exc

    def _decoder(self, col: Collection) -> Decoder:
        """The decoder of `col`'s schema, made again for a collection dropped and made anew under its name."""
        known = self._decoders.get(col.name)
        if known is None or known[0] is not col:
            known = self._decoders[col.name] = (col, Decoder(col.schema))
        return known[1]

    @_refusals
    def has_collection(self, collection_name: str, **_: Any) -> bool:
        with self._lock:
            return self._db.has_collection(collection_name)

    @_refusals
    def list_collections(self, **_: Any) -> list[str]:
        with self._lock:
            return list(self._db.list_collections())

    @_refusals
    def create_collection(self, collection_name: str, schema: LiteSchema, index_params: IndexParams | None = None,
                          properties: dict[str, Any] | None = None, **_: Any) -> None:
        """`consistency_level` and the like are accepted and ignored: milvus-lite reads its own writes."""
        with self._lock:
            self._db.create_collection(collection_name, schema.build(), properties={k: str(v) for k, v in (properties or {}).items()})
            if index_params:
                self.create_index(collection_name, index_params)
                self.load_collection(collection_name)

    @_refusals
    def describe_collection(self, collection_name: str, **_: Any) -> dict[str, Any]:
        with self._lock:
            col = self._col(collection_name)
            return describe(col.name, col.schema, len(col.list_partitions()))

    @_refusals
    def drop_collection(self, collection_name: str, **_: Any) -> None:
        with self._lock:
            self._db.drop_collection(collection_name)

    @_refusals
    def rename_collection(self, old_name: str, new_name: str, **_: Any) -> None:
        with self._lock:
            self._db.rename_collection(old_name, new_name)

    @_refusals
    def alter_collection_properties(self, collection_name: str, properties: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self._db.alter_collection_properties(collection_name, {k: str(v) for k, v in properties.items()})

    @_refusals
    def load_collection(self, collection_name: str, **_: Any) -> None:
        with self._lock:
            self._col(collection_name).load()

    @_refusals
    def release_collection(self, collection_name: str, **_: Any) -> None:
        with self._lock:
            self._col(collection_name).release()

    @_refusals
    def flush(self, collection_name: str, **_: Any) -> None:
        with self._lock:
            self._col(collection_name).flush()

    # ------------------------------------------------------------ indexes
    @_refusals
    def create_index(self, collection_name: str, index_params: IndexParams, sync: bool = True, **_: Any) -> None:
        """milvus-lite builds an index as the collection loads; none is pending afterwards."""
        with self._lock:
            col = self._col(collection_name)
            for param in index_params:
                col.create_index(param.field_name, param.spec())

    @_refusals
    def drop_index(self, collection_name: str, index_name: str, **_: Any) -> None:
        with self._lock:
            self._col(collection_name).drop_index(index_name)

    @_refusals
    def list_indexes(self, collection_name: str, field_name: str | None = None, **_: Any) -> list[str]:
        """Index names, which milvus-lite takes from their fields."""
        with self._lock:
            names = self._col(collection_name).list_indexes()
        return [n for n in names if field_name is None or n == field_name]

    @_refusals
    def describe_index(self, collection_name: str, index_name: str, **_: Any) -> dict[str, Any] | None:
        with self._lock:
            info = self._col(collection_name).get_index_info(index_name)
        if info is None:
            return None
        return {**info.get("params", {}), "index_type": info.get("index_type"), "metric_type": info.get("metric_type"),
                "field_name": index_name, "index_name": index_name, "state": "Finished"}

    # ------------------------------------------------------------ partitions
    @_refusals
    def list_partitions(self, collection_name: str, **_: Any) -> list[str]:
        with self._lock:
            return list(self._col(collection_name).list_partitions())

    @_refusals
    def has_partition(self, collection_name: str, partition_name: str, **_: Any) -> bool:
        with self._lock:
            return self._col(collection_name).has_partition(partition_name)

    @_refusals
    def create_partition(self, collection_name: str, partition_name: str, **_: Any) -> None:
        with self._lock:
            self._col(collection_name).create_partition(partition_name)

    # ------------------------------------------------------------ writes
    @_refusals
    def insert(self, collection_name: str, data: dict[str, Any] | list[dict[str, Any]], partition_name: str | None = None,
               **_: Any) -> dict[str, Any]:
        with self._lock:
            col = self._col(collection_name)
            rows = self._decoder(col).written([data] if isinstance(data, dict) else data)
            ids = col.insert(rows, partition_name=partition_name or "_default")
        return {"insert_count": len(ids), "ids": list(ids)}

    @_refusals
    def upsert(self, collection_name: str, data: dict[str, Any] | list[dict[str, Any]], partition_name: str | None = None,
               **_: Any) -> dict[str, Any]:
        with self._lock:
            col = self._col(collection_name)
            rows = self._decoder(col).written([data] if isinstance(data, dict) else data)
            ids = col.upsert(rows, partition_name=partition_name or "_default")
        return {"upsert_count": len(ids), "ids": list(ids)}

    @_refusals
    def delete(self, collection_name: str, ids: Sequence[Any] | None = None, filter: str = "",
               partition_name: str | None = None, **_: Any) -> dict[str, Any]:
        """By ids, or by filter: the matching keys found first, then deleted (as milvus-lite's server does)."""
        with self._lock:
            col = self._col(collection_name)
            if ids is None:
                parts = [partition_name] if partition_name else None
                ids = [r[col.pk_field] for r in col.query(filter or None, output_fields=[col.pk_field], partition_names=parts)]
            count = col.delete(list(ids), partition_name=partition_name) if ids else 0
        return {"delete_count": count}

    # ------------------------------------------------------------ reads
    @_refusals
    def query(self, collection_name: str, filter: str = "", output_fields: Sequence[str] | None = None,
              limit: int | None = None, partition_names: Sequence[str] | None = None, ids: Sequence[Any] | None = None,
              offset: int = 0, **_: Any) -> list[dict[str, Any]]:
        """Rows matching `filter`, or with the keys `ids` (read by key: not a scan) that also match `filter`
        (which pymilvus' client refuses: the store asks backend.keyed), or the count `[{"count(*)": n}]` when
        output_fields names it."""
        parts = list(partition_names) if partition_names else None
        if ids is not None:
            return self.get(collection_name, ids=ids, output_fields=output_fields, partition_names=partition_names,
                            filter=filter)
        with self._lock:
            col = self._col(collection_name)
            if output_fields and _COUNT in output_fields:
                if filter or parts:
                    count = len(col.query(filter or None, output_fields=[col.pk_field], partition_names=parts))
                else:
                    count = col.num_entities
                return [{_COUNT: count}]
            rows = col.query(filter or None, output_fields=_fields(output_fields), partition_names=parts,
                             limit=limit, offset=offset)
            return self._decoder(col).rows(rows)

    @_refusals
    def get(self, collection_name: str, ids: Any, output_fields: Sequence[str] | None = None,
            partition_names: Sequence[str] | None = None, filter: str = "", **_: Any) -> list[dict[str, Any]]:
        """Rows by primary key, in the order asked, those missing or not matching `filter` left out."""
        keys = list(ids) if isinstance(ids, (list, tuple)) else [ids]
        with self._lock:
            col = self._col(collection_name)
            rows = col.get(keys, partition_names=list(partition_names) if partition_names else None,
                           expr=filter or None, output_fields=_fields(output_fields))
            return self._decoder(col).rows(rows)

    def query_iterator(self, collection_name: str, batch_size: int = 1000, filter: str = "",
                       output_fields: Sequence[str] | None = None, partition_names: Sequence[str] | None = None,
                       **_: Any) -> QueryIterator:
        """Pages of `batch_size` rows in primary-key order; each page resumes after the last key read, so
        rows written or deleted meanwhile neither repeat nor shift a page."""
        with self._lock:
            col = self._col(collection_name)  # a missing collection is refused now, as by pymilvus
        return QueryIterator(self, collection_name, col.pk_field, batch_size, filter, output_fields, partition_names)

    @_refusals
    def search(self, collection_name: str, data: list[Any], anns_field: str | None = None, filter: str = "",
               limit: int = 10, output_fields: Sequence[str] | None = None, search_params: dict[str, Any] | None = None,
               partition_names: Sequence[str] | None = None, **_: Any) -> list[list[dict[str, Any]]]:
        """Hits `{"id", "distance", "entity"}` per query (vectors, or texts for a BM25 field); the entity holds
        the key when it was asked for, as pymilvus' does."""
        params = dict(search_params or {})
        metric = params.pop("metric_type", None)
        params.pop("params", None)
        with self._lock:
            col = self._col(collection_name)
            _check_dims(col, anns_field, data)
            res = col.search(query_vectors=self._decoder(col).queries(list(data), anns_field), top_k=limit, metric_type=metric,
                             partition_names=list(partition_names) if partition_names else None, expr=filter or None,
                             output_fields=_fields(output_fields), anns_field=anns_field, search_params=params or None)
            return self._hits(col, res, output_fields)

    def _hits(self, col: Collection, res: list[list[dict[str, Any]]], output_fields: Sequence[str] | None) -> list[list[dict[str, Any]]]:
        decode, pk = self._decoder(col), col.pk_field
        with_pk = output_fields is not None and pk in output_fields
        return [[{"id": h["id"], "distance": float32(h["distance"]),
                  "entity": {**({pk: h["id"]} if with_pk else {}), **decode.row(h.get("entity") or {})}} for h in hits]
                for hits in res]

    @_refusals
    def hybrid_search(self, collection_name: str, reqs: Sequence[Any], ranker: Any, limit: int = 10,
                      output_fields: Sequence[str] | None = None, partition_names: Sequence[str] | None = None,
                      **_: Any) -> list[list[dict[str, Any]]]:
        """pymilvus' AnnSearchRequests (data, anns_field, param, limit, expr) searched one by one, fused by the
        ranker (`ranker.dict()`: RRFRanker or WeightedRanker) as milvus-lite's server fuses them."""
        routes, metrics = [], []
        for req in reqs:
            param = dict(req.param or {})
            with self._lock:
                col = self._col(collection_name)
                metrics.append(col.resolve_search_metric(req.anns_field, param.get("metric_type")))
            routes.append(self.search(collection_name, list(req.data), anns_field=req.anns_field, filter=req.expr or "",
                                      limit=req.limit, output_fields=output_fields, search_params=param,
                                      partition_names=partition_names))
        fuse = fusion(ranker.dict(), metrics)
        return [fuse([route[q] for route in routes])[:limit] for q in range(len(routes[0]) if routes else 0)]


class QueryIterator:
    """pymilvus' QueryIterator: `next()` a page (empty at the end), `close()`."""

    def __init__(self, client: LiteClient, name: str, pk: str, batch: int, expr: str,
                 fields: Sequence[str] | None, parts: Sequence[str] | None) -> None:
        self._client, self._name, self._pk, self._batch = client, name, pk, max(1, int(batch))
        self._expr, self._fields, self._parts = expr or None, fields, parts
        self._after: Any = None
        self._done = False

    def next(self) -> list[dict[str, Any]]:
        if self._done:
            return []
        expr = F.and_(self._expr, F.cmp(self._pk, ">", self._after) if self._after is not None else None) or None
        fields = list(self._fields) if self._fields else None
        if fields is not None and "*" not in fields and self._pk not in fields:
            fields.append(self._pk)
        with self._client._lock:
            try:
                col = self._client._col(self._name)
                rows = col.query(expr, output_fields=_fields(fields), partition_names=list(self._parts) if self._parts else None,
                                 limit=self._batch, order_by_pk=True)
            except BackendError:
                raise
            except Exception as exc:  # as _refusals
                raise BackendError(f"{type(exc).__name__}: {exc}") from exc
            page = self._client._decoder(col).rows(rows)
        if len(page) < self._batch:
            self._done = True
        if page:
            self._after = page[-1][self._pk]
        if self._fields and "*" not in self._fields and self._pk not in self._fields:
            page = [{k: v for k, v in r.items() if k != self._pk} for r in page]
        return page

    def close(self) -> None:
        self._done = True


def _check_dims(col: Collection, anns_field: str | None, data: list[Any]) -> None:
    """A dense query vector of another length is refused, as Milvus refuses it (the engine would assert)."""
    dense = {f.name: f.dim for f in col.schema.fields if f.dtype == DataType.FLOAT_VECTOR}
    name = anns_field or (next(iter(dense)) if len(dense) == 1 else None)
    dim = dense.get(name or "")
    for q in data:
        if dim is not None and (isinstance(q, str) or len(q) != dim):
            raise BackendError(f"the vector field {name!r} holds {dim}-d vectors; a query of {len(q)} was given")


_ENGINES: dict[str, list[Any]] = {}  # path -> [MilvusLite, its lock, clients open]
_ENGINES_LOCK = threading.Lock()


def _open(path: str) -> tuple[MilvusLite, threading.RLock]:
    with _ENGINES_LOCK:
        entry = _ENGINES.get(path)
        if entry is None:
            entry = _ENGINES[path] = [MilvusLite(path), threading.RLock(), 0]
        entry[2] += 1
        return entry[0], entry[1]


def _release(path: str) -> None:
    with _ENGINES_LOCK:
        entry = _ENGINES.get(path)
        if entry is None:
            return
        entry[2] -= 1
        if entry[2] > 0:
            return
        del _ENGINES[path]
    with entry[1]:
        entry[0].close()


def _fields(output_fields: Sequence[str] | None) -> list[str] | None:
    return list(output_fields) if output_fields else None
