"""What a store client raises when Milvus refuses a call, on either backend: pymilvus' `MilvusException`
(a server URI) or `BackendError` (a local path, store/lite_client.py; an index that failed to build on either). The store asks `refused(exc)` instead
of naming pymilvus' class, so a local store never imports pymilvus (its imports are most of a CLI start)."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple, Protocol


class BackendError(Exception):
    """milvus-lite refused a call (its `MilvusLiteError`, a filter it cannot parse, a missing collection),
    or an index was not built: the message as pymilvus would show it, the engine's exception as the cause."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def refused(exc: BaseException) -> bool:
    """`exc` is a backend's refusal (not a bug of ours): a BackendError, or a MilvusException where pymilvus
    is loaded (a server URI: only then can one have been raised)."""
    if isinstance(exc, BackendError):
        return True
    errors = sys.modules.get("pymilvus.exceptions")
    return errors is not None and isinstance(exc, errors.MilvusException)


def keyed(client: Any, ids: list[Any], where: str = "", pk: str = "id") -> dict[str, Any]:
    """The `query` arguments that read the rows with keys `ids` which also match `where` (built by
    store/filters.py). A client with `reads_keys_with_filter` (LiteClient) takes both and finds each key in
    its key index, where a filter `id in [...]` tests every row; pymilvus' MilvusClient refuses ids beside a
    filter (it builds `id in [...]` itself), so a server is given the one expression `id in [...] and (where)`."""
    if not where:
        return {"ids": ids}
    if getattr(client, "reads_keys_with_filter", False):
        return {"ids": ids, "filter": where}
    from . import filters as F

    return {"filter": F.and_(F.in_(pk, ids), where)}


class Kinds(NamedTuple):
    """The schema types a client's `create_schema` takes: pymilvus' or milvus-lite's (the same names)."""

    DataType: Any
    Function: Any
    FunctionType: Any


class HybridKinds(NamedTuple):
    """What a hybrid search is asked with: pymilvus' `AnnSearchRequest(data, anns_field, param, limit, expr)`,
    `RRFRanker(k)`, `WeightedRanker(*weights)`, or a LiteClient's own (store/lite_ranking.py)."""

    AnnSearchRequest: Any
    RRFRanker: Any
    WeightedRanker: Any


def hybrid_kinds(client: Any) -> HybridKinds:
    """The request and ranker types of `client`'s hybrid_search: a LiteClient carries its own, so a local store
    never imports pymilvus (tests/test_import_state.py); pymilvus' MilvusClient takes pymilvus'."""
    own = getattr(client, "hybrid", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

    return HybridKinds(AnnSearchRequest, RRFRanker, WeightedRanker)


def kinds(client: Any) -> Kinds:
    """The schema types of `client`: a LiteClient carries milvus-lite's; pymilvus' MilvusClient takes pymilvus'."""
    own = getattr(client, "kinds", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    from pymilvus import DataType, Function, FunctionType

    return Kinds(DataType, Function, FunctionType)


class StoreClient(Protocol):
    """The one store interface: the MilvusClient methods the store calls. pymilvus' `MilvusClient` (a server
    URI) and store/lite_client.LiteClient (a local path) both implement it; tests/store/test_lite_client.py
    holds them to the same results."""

    def has_collection(self, collection_name: str) -> bool: ...
    def create_collection(self, collection_name: str, schema: Any = ..., **kwargs: Any) -> None: ...
    def describe_collection(self, collection_name: str) -> dict[str, Any]: ...
    def drop_collection(self, collection_name: str) -> None: ...
    def rename_collection(self, old_name: str, new_name: str) -> None: ...
    def alter_collection_properties(self, collection_name: str, properties: dict[str, Any]) -> None: ...
    def load_collection(self, collection_name: str) -> None: ...
    def release_collection(self, collection_name: str) -> None: ...
    def create_schema(self, auto_id: bool = ..., enable_dynamic_field: bool = ...) -> Any: ...
    def prepare_index_params(self) -> Any: ...
    def create_index(self, collection_name: str, index_params: Any, **kwargs: Any) -> None: ...
    def list_indexes(self, collection_name: str, field_name: str | None = ...) -> list[str]: ...
    def describe_index(self, collection_name: str, index_name: str) -> dict[str, Any] | None: ...
    def list_partitions(self, collection_name: str) -> list[str]: ...
    def has_partition(self, collection_name: str, partition_name: str) -> bool: ...
    def create_partition(self, collection_name: str, partition_name: str) -> None: ...
    def insert(self, collection_name: str, data: Any, **kwargs: Any) -> dict[str, Any]: ...
    def upsert(self, collection_name: str, data: Any, **kwargs: Any) -> dict[str, Any]: ...
    def delete(self, collection_name: str, **kwargs: Any) -> Any: ...
    def query(self, collection_name: str, **kwargs: Any) -> list[dict[str, Any]]: ...  # ids + filter: see keyed()
    def query_iterator(self, collection_name: str, **kwargs: Any) -> Any: ...
    def search(self, collection_name: str, **kwargs: Any) -> Any: ...
    def hybrid_search(self, collection_name: str, reqs: Any, ranker: Any, **kwargs: Any) -> Any: ...
    def get_server_version(self) -> str: ...
    def close(self) -> None: ...
