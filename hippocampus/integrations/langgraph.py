"""Hippocampus as a LangGraph store: `graph.compile(store=HippocampusStore(memory))`, and a node's
`store.put / get / search / list_namespaces` read and write the user's Hippocampus memories.

The namespace rule (docs/integrations.md): a namespace is `(*prefix, user_id, *rest)`, the prefix
`("memories",)` by default; with `user_id=` given to the store it is `(*prefix, *rest)`, all of
that user. Each item is one memory of that user: its text is `value["text"]` (or `value["content"]`)
when that is a string, else the value as JSON; its metadata keeps the rest and the key, so a key
names one memory per namespace (a put on an existing key updates that memory in place, its id
kept), and the value itself, returned as it was put:

    lg_scope  the prefix joined by "."      lg_ns    the rest joined by "." ("" at the user's root)
    lg_key    the item's key                lg_value the value (a JSON object)
    lg_path   {"d1": "a", "d2": "a.b", ...} the rest's prefixes, so a search under a prefix is one
                                            exact filter (LangGraph forbids "." inside a label)

Search is `Memory.search` (hybrid, context and ranking stages) restricted by those filters to the
namespace prefix; a search without a query lists the items, oldest first. Items are written as
`memory_type="procedural"` by default: consolidation merges episodes and supersedes or compresses
facts, and a key-value item must not be merged away; they still age by the lifecycle (decay).
TTL (minutes, per put or `ttl={"default_ttl": ...}`) is the memory's `expires_at`: an expired item
leaves get, search and listings at once, and decay archives it. A read refreshes it (LangGraph's
`refresh_on_read`, on by default) by rewriting the expiry, one `Memory.update` per item read that
has a TTL; `ttl={"refresh_on_read": False}` skips that. `lg_ttl` keeps the item's TTL.

Only the `Memory` facade is used (a face; hippocampus imports nothing from here). Heavy: imports langgraph.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from functools import partial
from typing import Any

from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, Op,
                                  PutOp, Result, SearchItem, SearchOp, TTLConfig)
from langgraph.store.base import validate_op_namespace

from ..models import MemoryRecord, now_ts

__all__ = ["HippocampusStore", "value_text"]

SCOPE, NS, KEY, VALUE, PATH, TTL = "lg_scope", "lg_ns", "lg_key", "lg_value", "lg_path", "lg_ttl"
MAX_SEARCH = 1000  # Memory.search's largest limit
NEVER = 253402300799  # the end of year 9999: how a put without a TTL lifts an item's earlier one


def value_text(value: Mapping[str, Any]) -> str:
    """What is embedded and searched for an item: its "text" or "content" string, else its JSON."""
    for field in ("text", "content"):
        if isinstance(value.get(field), str) and value[field].strip():
            return value[field]
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _dt(epoch: int | None) -> datetime:
    return datetime.fromtimestamp(epoch or 0, tz=timezone.utc)


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter rule (as InMemoryStore): exact match, nested objects, $eq $ne $gt $gte $lt $lte."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(actual, op, arg) for op, arg in wanted.items())
        return isinstance(actual, dict) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(wanted)
                and all(_compare(a, w) for a, w in zip(actual, wanted)))
    return actual == wanted


def _operator(actual: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return actual == arg
    if op == "$ne":
        return actual != arg
    checks = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}
    if op not in checks:
        raise ValueError(f"unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        return actual is not None and checks[op](actual, arg)
    except TypeError:
        return False


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))


class HippocampusStore(BaseStore):
    """A LangGraph `BaseStore` over a `Memory`: each item one memory of the user its namespace names.

    `prefix`: the namespace's fixed first labels (default ("memories",)). `user_id`: bind the store
    to one user (namespaces then carry no user). `users`: the users a listing or a search whose
    prefix stops before the user walks (Hippocampus reads one user at a time). `memory_type` and
    `chat_id`: how items are written. `ttl`: LangGraph's TTLConfig (default_ttl, refresh_on_read)."""

    supports_ttl = True

    def __init__(self, memory: Any, *, prefix: Sequence[str] | str = ("memories",), user_id: str | None = None,
                 users: Iterable[str] = (), memory_type: str = "procedural", chat_id: str = "langgraph",
                 ttl: TTLConfig | None = None) -> None:
        self.memory = memory
        self.prefix = (prefix,) if isinstance(prefix, str) else tuple(prefix)
        for label in self.prefix:
            if not isinstance(label, str) or not label or "." in label:
                raise InvalidNamespaceError(f"prefix labels must be non-empty strings without '.', got {label!r}")
        self.user_id = user_id
        self.users = tuple(users)
        self.memory_type = memory_type
        self.chat_id = chat_id
        self.ttl_config = ttl
        self._scope = ".".join(self.prefix)
        self._lock = threading.Lock()  # one batch at a time: a put looks its key up, then writes

    # ------------------------------------------------------------------ the namespace rule
    def _split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """(user_id, rest) of an item's namespace; InvalidNamespaceError when it is outside the rule."""
        n = len(self.prefix)
        if tuple(namespace[:n]) != self.prefix or (self.user_id is None and len(namespace) <= n):
            shape = f"({', '.join(map(repr, self.prefix))}{'' if self.user_id else ', user_id'}, ...)"
            raise InvalidNamespaceError(f"namespace {tuple(namespace)!r} is outside this store: use {shape}")
        if self.user_id is not None:
            return self.user_id, tuple(namespace[n:])
        return namespace[n], tuple(namespace[n + 1:])

    def _namespace(self, user_id: str, record: MemoryRecord) -> tuple[str, ...]:
        rest = tuple(record.metadata.get(NS, "").split(".")) if record.metadata.get(NS) else ()
        return (*self.prefix, *(() if self.user_id is not None else (user_id,)), *rest)

    def _users_under(self, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
        """(user, rest prefix) pairs a search or listing under `prefix` covers."""
        n = len(self.prefix)
        if tuple(prefix[:n]) != self.prefix[: len(prefix)]:
            return []  # another prefix: none of this store's items
        if self.user_id is not None:
            return [(self.user_id, tuple(prefix[n:]))]
        if len(prefix) > n:
            return [(prefix[n], tuple(prefix[n + 1:]))]
        if not self.users:
            raise InvalidNamespaceError(f"name the user: a prefix ({', '.join(map(repr, self.prefix))}, user_id, ...), "
                                        "or give the store users=[...] to walk")
        return [(user, ()) for user in self.users]

    def _items(self, user_id: str) -> list[MemoryRecord]:
        """This store's items of one user (its memories carrying this scope), oldest first."""
        return [r for r in self.memory.get_all(user_id, filters={f"metadata.{SCOPE}": self._scope}) if KEY in r.metadata]

    def _item(self, user_id: str, record: MemoryRecord, score: float | None = None, search: bool = False) -> Item:
        meta = record.metadata
        created, updated = _dt(meta.get("created_at", record.created_at)), _dt(meta.get("updated_at", record.updated_at))
        fields = dict(namespace=self._namespace(user_id, record), key=meta[KEY], value=dict(meta.get(VALUE) or {}),
                      created_at=created, updated_at=updated or created)
        return SearchItem(**fields, score=score) if search else Item(**fields)

    # ------------------------------------------------------------------ the ops
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order of reads first (they see the store as it was before the batch, as
        InMemoryStore does), then the puts, the last put of a (namespace, key) winning. A bad
        namespace or TTL is refused before anything is written."""
        ops = list(ops)
        with self._lock:
            return self._batch(ops)

    def _batch(self, ops: list[Op]) -> list[Result]:
        for op in ops:
            validate_op_namespace(op)
        cache: dict[str, list[MemoryRecord]] = {}

        def items(user_id: str) -> list[MemoryRecord]:
            if user_id not in cache:
                cache[user_id] = self._items(user_id)
            return cache[user_id]

        read: dict[int, tuple[str, MemoryRecord]] = {}  # items with a TTL a read refreshes

        def touch(refresh: bool, user_id: str, record: MemoryRecord) -> None:
            if refresh and record.metadata.get(TTL) is not None:
                read[record.id] = (user_id, record)

        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, items, partial(touch, op.refresh_ttl)))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, items, partial(touch, op.refresh_ttl)))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list(op, items))
            elif isinstance(op, PutOp):
                self._split(op.namespace)  # refused before anything is written
                if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not op.ttl > 0):
                    raise ValueError(f"ttl is minutes, more than 0, got {op.ttl!r}")
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        for user_id, record in read.values():
            self.memory.update(record.id, record.text, user_id, expires_at=self._expiry(record.metadata[TTL]))
        for op in puts.values():
            self._put(op, items)
        return results

    @staticmethod
    def _expiry(ttl_minutes: float) -> int:
        return now_ts() + max(1, math.ceil(float(ttl_minutes) * 60))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread: the Memory is synchronous."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _find(self, namespace: tuple[str, ...], key: str, items: Any) -> tuple[str, MemoryRecord | None]:
        user_id, rest = self._split(namespace)
        joined = ".".join(rest)
        for record in items(user_id):
            if record.metadata.get(NS, "") == joined and record.metadata.get(KEY) == key:
                return user_id, record
        return user_id, None

    def _get(self, op: GetOp, items: Any, touch: Callable[[str, MemoryRecord], None]) -> Item | None:
        user_id, record = self._find(tuple(op.namespace), op.key, items)
        if record is None:
            return None
        touch(user_id, record)
        return self._item(user_id, record)

    def _put(self, op: PutOp, items: Any) -> None:
        user_id, rest = self._split(tuple(op.namespace))
        _, record = self._find(tuple(op.namespace), op.key, items)
        if op.value is None:
            if record is not None:
                self.memory.delete(record.id, user_id)
            return
        value = dict(op.value)
        joined = ".".join(rest)
        meta = {SCOPE: self._scope, NS: joined, KEY: op.key, VALUE: value, TTL: op.ttl,
                PATH: {f"d{i}": ".".join(rest[:i]) for i in range(1, len(rest) + 1)}}
        expires = self._expiry(op.ttl) if op.ttl is not None else None
        if record is not None:
            if expires is None and record.metadata.get(TTL) is not None:
                expires = NEVER  # the item had a TTL; this put has none
            self.memory.update(record.id, value_text(value), user_id, metadata=meta, expires_at=expires)
        else:
            self.memory.add(value_text(value), user_id=user_id, chat_id=self.chat_id, metadata=meta,
                            memory_type=self.memory_type, expires_at=expires)

    def _search(self, op: SearchOp, items: Any, touch: Callable[[str, MemoryRecord], None]) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise ValueError("limit and offset must be 0 or more")
        found: list[tuple[SearchItem, str, MemoryRecord]] = []
        scopes = self._users_under(tuple(op.namespace_prefix))
        for user_id, rest in scopes:
            want = op.offset + op.limit
            if op.query and op.query.strip():
                found += self._ranked(op, user_id, rest, want)
            else:
                joined = ".".join(rest)
                for record in items(user_id):
                    ns = record.metadata.get(NS, "")
                    if (not rest or ns == joined or ns.startswith(joined + ".")) and self._passes(record, op.filter):
                        found.append((self._item(user_id, record, search=True), user_id, record))
        if op.query and len(scopes) > 1:
            found.sort(key=lambda hit: -(hit[0].score or 0.0))
        page = found[op.offset: op.offset + op.limit]
        for _item, user_id, record in page:
            touch(user_id, record)
        return [item for item, _user, _record in page]

    def _ranked(self, op: SearchOp, user_id: str, rest: tuple[str, ...], want: int) -> list[tuple[SearchItem, str, MemoryRecord]]:
        """Memory.search, held to the namespace by exact metadata filters (the filter's plain string
        fields too); the rest of the filter is applied to the ranked hits, over-fetching to fill a page."""
        filters: dict[str, Any] = {f"metadata.{SCOPE}": self._scope}
        if rest:
            filters[f"metadata.{PATH}.d{len(rest)}"] = ".".join(rest)
        pushed = True
        for field, wanted in (op.filter or {}).items():
            if isinstance(wanted, dict) and set(wanted) == {"$eq"}:
                wanted = wanted["$eq"]
            if isinstance(wanted, str) and field.isidentifier() and field.isascii() and len(field) <= 64:
                filters[f"metadata.{VALUE}.{field}"] = wanted
            else:
                pushed = False
        limit = min(MAX_SEARCH, want if pushed else max(want * 4, 100))  # a filter left to apply: over-fetch
        if limit == 0:
            return []
        result = self.memory.search(op.query, user_id=user_id, limit=limit, memory_types=[self.memory_type],
                                    filters=filters)
        return [(self._item(user_id, hit.memory, score=hit.score, search=True), user_id, hit.memory) for hit in result.all
                if KEY in hit.memory.metadata and self._passes(hit.memory, op.filter)]

    @staticmethod
    def _passes(record: MemoryRecord, wanted: dict[str, Any] | None) -> bool:
        value = record.metadata.get(VALUE) or {}
        return all(_compare(value.get(field), w) for field, w in (wanted or {}).items())

    def _list(self, op: ListNamespacesOp, items: Any) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        fixed = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        cut = len(self.prefix) + (0 if self.user_id is not None else 1)
        start = fixed[:cut] if "*" not in fixed[:cut] else fixed[: fixed.index("*")]
        seen: set[tuple[str, ...]] = set()
        for user_id, _rest in self._users_under(start):
            for record in items(user_id):
                seen.add(self._namespace(user_id, record))
        namespaces = [ns for ns in seen if all(_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset: op.offset + op.limit]
