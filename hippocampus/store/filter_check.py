"""The caller's filters checked against the user's rows: each bare key proven to be a metadata key of some
memory of the user, and the part Milvus cannot evaluate exactly (filter_ops.py) turned into ids.

Why apart from filters.py: filters.py builds filter strings and reads no store; these functions query one,
so they sit beside the store reads they make, and name what they use of the store (`Rows`) instead of
importing MilvusStore (whose module imports filters.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from ..models import MemoryRecord
from . import filter_ops
from .capabilities import Capabilities
from .filter_ops import DECLARED_CATEGORIES
from .filters import NEVER, CallerFilter, ambiguous_field, and_, caller_filter, eq, in_, json_exists, unknown_field


class Rows(Protocol):
    """What the check reads of its store (MilvusStore, store/milvus.py): the user's bucket and its rows."""

    capabilities: Capabilities

    def partition_for(self, user_id: str) -> str | None: ...
    def query(self, filter_expr: str, fields: Sequence[str] = ..., limit: int | None = None,
              partition: str | None = None) -> list[dict[str, Any]]: ...
    def iterate(self, filter_expr: str, fields: Sequence[str] = ..., batch: int = ...,
                partition: str | None = None) -> Iterator[list[dict[str, Any]]]: ...


def resolve_residual(store: Rows, user_id: str, caller: CallerFilter) -> CallerFilter:
    """The residual evaluated over this user's rows that the pushed-down part keeps (one scan of
    them), reaching Milvus as `id in [...]`: exact on every engine."""
    if caller.residual is None:
        return caller
    part = store.partition_for(user_id)
    ids: list[int] = []
    if part is not None:
        for page in store.iterate(and_(eq("user_id", user_id), caller.expr), partition=part):
            ids += [int(r["id"]) for r in page if filter_ops.evaluate(caller.residual, MemoryRecord.from_row(r))]
    return CallerFilter(and_(caller.expr, in_("id", ids) if ids else NEVER), caller.bare, caller.wants_superseded,
                        named_life=caller.named_life)


def checked_filter(store: Rows, user_id: str, filters: dict[str, object] | None,
                   categories: Iterable[str] = ()) -> CallerFilter:
    """`caller_filter` (filters.py), each bare key proven to be a metadata key of some memory of this user
    (one row read per such key) or refused: a misspelt field is an InvalidInput naming the fields, never
    an empty answer. A server without JSON `exists` (Milvus before 2.4) cannot be asked; there a
    bare key is taken as a metadata key."""
    token = DECLARED_CATEGORIES.set(frozenset(categories))  # the project's categories are filterable names
    try:
        caller = caller_filter(filters, store.capabilities.json_exists)
    finally:
        DECLARED_CATEGORIES.reset(token)
    if (caller.bare or caller.named_life) and store.capabilities.json_exists:
        part = store.partition_for(user_id)

        def has_key(key: str) -> bool:
            return part is not None and bool(store.query(and_(eq("user_id", user_id), json_exists("metadata", key)),
                                                         fields=["id"], limit=1, partition=part))
        for key in caller.bare:
            if not has_key(key):
                raise unknown_field(key)
        for key in caller.named_life:
            if has_key(key):
                raise ambiguous_field(key)
    return resolve_residual(store, user_id, caller)
