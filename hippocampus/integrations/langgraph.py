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
    lg_vec    the item's vectors (langgraph_index.py)   lg_ttl  the TTL in minutes, or null

A search with a query is LangGraph's: the cosine similarity between the query and the item's indexed
fields (langgraph_index.py), in [-1, 1], best first. The users a listing or a search without a user
walks are the store's `users=`, or by default every user that has put an item through a store of
this prefix (kept in a registry, one reserved pseudo-user per prefix), at most `max_users` of them.
A batch is done in bulk: one read of each user's items, one embedding call, one `add_many`, the
updates through `update_many` and the deletes through `delete_many`. Concurrent async calls are
gathered into one batch (as LangGraph's AsyncBatchedBaseStore does), reads seeing the store as it
was before the batch. TTL (minutes) is the memory's `expires_at`; a read refreshes it.

Only the `Memory` facade is used (a face; hippocampus imports nothing from here). Heavy: imports langgraph.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import math
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from ..models import MemoryRecord, now_ts
from .langgraph_index import (
    INDEXED,
    VEC,
    Index,
    best_score,
    compare,
    matches,
    to_datetime,
    value_text,
)
from .langgraph_ttl import Sweeper, sweep

__all__ = ["HippocampusStore", "value_text"]

SCOPE, NS, KEY, VALUE, PATH, TTL, UPDATED = "lg_scope", "lg_ns", "lg_key", "lg_value", "lg_path", "lg_ttl", "lg_updated"
NEVER = 253402300799  # the end of year 9999: how a put without a TTL lifts an item's earlier one
CHUNK = 1000  # update_many / delete_many take at most this many


def registry_user(scope: str) -> str:
    """The reserved user whose memories list the users of the stores of one prefix."""
    digest = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:24]
    return f"lg-store:{digest}"


class _View:
    """One batch's reads: each user's items of this store, read once, keyed by (rest, key)."""

    def __init__(self, store: HippocampusStore) -> None:
        self.store = store
        self.cache: dict[str, dict[tuple[str, str], MemoryRecord]] = {}

    def items(self, user_id: str) -> dict[tuple[str, str], MemoryRecord]:
        if user_id not in self.cache:
            records = self.store.memory.get_all(user_id, filters={f"metadata.{SCOPE}": self.store._scope})
            self.cache[user_id] = {(r.metadata.get(NS, ""), r.metadata[KEY]): r for r in records if KEY in r.metadata}
        return self.cache[user_id]

    def find(self, user_id: str, rest: tuple[str, ...], key: str) -> MemoryRecord | None:
        return self.items(user_id).get((".".join(rest), key))


class HippocampusStore(BaseStore):
    """A LangGraph `BaseStore` over a `Memory`: each item one memory of the user its namespace names.

    `prefix`: the namespace's fixed first labels (default ("memories",)). `user_id`: bind the store
    to one user (namespaces then carry no user). `users`: the only users this store may read and write
    (default None: every user). `max_users`: the most users a listing or search without a user walks.
    `index`: LangGraph's IndexConfig (embed, fields; default: the memory's embedder on the item's text).
    `memory_type` and `chat_id`: how items are written. `ttl`: LangGraph's TTLConfig."""

    supports_ttl = True

    def __init__(self, memory: Any, *, prefix: Sequence[str] | str = ("memories",), user_id: str | None = None,
                 users: Iterable[str] | None = None, max_users: int = 1000, index: IndexConfig | None = None,
                 memory_type: str = "procedural", chat_id: str = "langgraph", ttl: TTLConfig | None = None) -> None:
        self.memory = memory
        self.prefix = (prefix,) if isinstance(prefix, str) else tuple(prefix)
        for label in self.prefix:
            if not isinstance(label, str) or not label or "." in label:
                raise InvalidNamespaceError(f"prefix labels must be non-empty strings without '.', got {label!r}")
        if isinstance(max_users, bool) or not isinstance(max_users, int) or max_users < 1:
            raise ValueError(f"max_users must be a whole number of at least 1, got {max_users!r}")
        self.user_id = user_id
        self.users = tuple(users) if users is not None else None
        self.max_users = max_users
        self.index_config = index
        self.index = Index(memory, index)
        self.memory_type = memory_type
        self.chat_id = chat_id
        self.ttl_config = ttl
        self._scope = self.scope = ".".join(self.prefix)  # lg_scope of this store's items
        self._registry = registry_user(self._scope)
        self._known: set[str] = set()  # users the registry is known to hold
        self._sweeper = Sweeper(self)
        self._lock = threading.Lock()  # one batch at a time: a put looks its key up, then writes
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[tuple[list[Op], asyncio.Future[list[Result]]]]] = \
            weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ TTL sweep (langgraph_ttl.py)
    def sweep_ttl(self) -> int:
        """Delete the expired items (history kept); returns how many."""
        return sweep(self)

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(sweep, self)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Sweep every `sweep_interval_minutes` (default: the store's ttl config) in a daemon thread."""
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        return self._sweeper.start(interval)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        return self._sweeper.stop(timeout)

    # ------------------------------------------------------------------ the namespace rule and the users
    def _split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """(user_id, rest) of an item's namespace; InvalidNamespaceError when it is outside the rule."""
        n = len(self.prefix)
        if tuple(namespace[:n]) != self.prefix or (self.user_id is None and len(namespace) <= n):
            shape = f"({', '.join(map(repr, self.prefix))}{'' if self.user_id else ', user_id'}, ...)"
            raise InvalidNamespaceError(f"namespace {tuple(namespace)!r} is outside this store: use {shape}")
        if self.user_id is not None:
            return self.user_id, tuple(namespace[n:])
        self._allowed(namespace[n])
        return namespace[n], tuple(namespace[n + 1:])

    def _allowed(self, user_id: str) -> None:
        if self.users is not None and user_id not in self.users:
            raise InvalidNamespaceError(f"user {user_id!r} is not one of this store's users")

    def _namespace(self, user_id: str, record: MemoryRecord) -> tuple[str, ...]:
        rest = tuple(record.metadata.get(NS, "").split(".")) if record.metadata.get(NS) else ()
        return (*self.prefix, *(() if self.user_id is not None else (user_id,)), *rest)

    def known_users(self) -> list[str]:
        """Every user with an item in a store of this prefix (the registry), sorted; `users=` when given."""
        if self.users is not None:
            return sorted(self.users)
        found = {r.text for r in self.memory.get_all(self._registry)}
        self._known |= found
        return sorted(found)

    def _walk(self) -> list[str]:
        users = self.known_users()
        if len(users) > self.max_users:
            raise InvalidNamespaceError(f"this store has {len(users)} users, more than max_users={self.max_users} a "
                                        "listing or search without a user walks: name the user in the namespace")
        return users

    def _users_under(self, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
        """(user, rest prefix) pairs a search or listing under `prefix` covers ("*" as the user: all)."""
        n = len(self.prefix)
        head = tuple(prefix[:n])
        if len(head) > len(self.prefix) or any(p not in ("*", q) for p, q in zip(head, self.prefix)):
            return []  # another prefix: none of this store's items
        if self.user_id is not None:
            return [(self.user_id, tuple(prefix[n:]))]
        if len(prefix) > n and prefix[n] != "*":
            self._allowed(prefix[n])
            return [(prefix[n], tuple(prefix[n + 1:]))]
        return [(user, tuple(prefix[n + 1:])) for user in self._walk()]

    # ------------------------------------------------------------------ the ops
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops: the reads see the store as it was before the batch (as InMemoryStore's do),
        then the puts are written in bulk, the last put of a (namespace, key) winning. A bad namespace,
        TTL or index is refused before anything is written."""
        ops = list(ops)
        with self._lock:
            return self._batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread; async calls made together are run as one batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Result]] = loop.create_future()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = []
            loop.create_task(self._flush(loop))
        queue.append((list(ops), future))
        return await future

    async def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        await asyncio.sleep(0)  # let the calls made together join the queue
        queue = self._queues.pop(loop, [])
        merged = [op for ops, _ in queue for op in ops]
        try:
            results = await asyncio.to_thread(self.batch, merged)
        except Exception:  # one call's bad op: each call alone, so each gets its own answer
            for ops, future in queue:
                try:
                    result = await asyncio.to_thread(self.batch, ops)
                except Exception as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(result)
            return
        at = 0
        for ops, future in queue:
            if not future.done():
                future.set_result(results[at: at + len(ops)])
            at += len(ops)

    def _batch(self, ops: list[Op]) -> list[Result]:
        for op in ops:
            validate_op_namespace(op)
        view = _View(self)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                self._split(op.namespace)  # refused before anything is written
                if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not op.ttl > 0):
                    raise ValueError(f"ttl is minutes, more than 0, got {op.ttl!r}")
                if op.value is not None:
                    self.index.texts(op.value, op.index)  # a bad index is refused now
                puts[(tuple(op.namespace), op.key)] = op
            elif not isinstance(op, (GetOp, SearchOp, ListNamespacesOp)):
                raise ValueError(f"unknown operation {type(op).__name__}")
        queries = self.index.embed_queries(sorted({op.query for op in ops if isinstance(op, SearchOp) and op.query}))
        touched: dict[int, tuple[str, MemoryRecord]] = {}  # items with a TTL a read refreshes
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                user_id, rest = self._split(tuple(op.namespace))
                record = view.find(user_id, rest, op.key)
                if record is not None and op.refresh_ttl and record.metadata.get(TTL) is not None:
                    touched[record.id] = (user_id, record)
                results.append(None if record is None else self._item(user_id, record))
            elif isinstance(op, SearchOp):
                page = self._search(op, view, queries.get(op.query) if op.query else None)
                if op.refresh_ttl:
                    touched.update({r.id: (u, r) for _i, u, r in page if r.metadata.get(TTL) is not None})
                results.append([item for item, _u, _r in page])
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list(op, view))
            else:
                results.append(None)
        self._refresh(touched)
        self._write(list(puts.values()), view)
        return results

    # ------------------------------------------------------------------ writing, in bulk
    @staticmethod
    def _expiry(ttl_minutes: float) -> int:
        """Epoch seconds, rounded up: an item never expires before its TTL (at most a second after it)."""
        return math.ceil(time.time() + max(1.0, float(ttl_minutes) * 60))

    def _refresh(self, touched: dict[int, tuple[str, MemoryRecord]]) -> None:
        """A read renews the items' TTL: one write per user and 1,000 items, no history event (renew_expiry)."""
        by_user: dict[str, dict[int, int]] = {}
        for user_id, record in touched.values():
            by_user.setdefault(user_id, {})[record.id] = self._expiry(record.metadata[TTL])
        for user_id, expiries in by_user.items():
            ids = list(expiries)
            for start in range(0, len(ids), CHUNK):
                self.memory.renew_expiry({i: expiries[i] for i in ids[start: start + CHUNK]}, user_id)

    def _write(self, puts: list[PutOp], view: _View) -> None:
        live = [(op, op.value) for op in puts if op.value is not None]
        vectors = dict(zip((id(op) for op, _value in live), self.index.vectors([(value, op.index) for op, value in live])))
        new: list[dict[str, Any]] = []
        updates: dict[str, list[dict[str, Any]]] = {}
        deletes: dict[str, list[int]] = {}
        for op in puts:
            user_id, rest = self._split(tuple(op.namespace))
            record = view.find(user_id, rest, op.key)
            if op.value is None:
                if record is not None:
                    deletes.setdefault(user_id, []).append(record.id)
                continue
            value, vec = dict(op.value), vectors[id(op)]
            meta = {SCOPE: self._scope, NS: ".".join(rest), KEY: op.key, VALUE: value, TTL: op.ttl, UPDATED: now_ts(),
                    PATH: {f"d{i}": ".".join(rest[:i]) for i in range(1, len(rest) + 1)}, VEC: vec or {},
                    INDEXED: vec is not None}
            expires = self._expiry(op.ttl) if op.ttl is not None else None
            if record is not None:
                if expires is None and record.metadata.get(TTL) is not None:
                    expires = NEVER  # the item had a TTL; this put has none
                item = {"memory_id": record.id, "text": value_text(value), "metadata": meta}
                updates.setdefault(user_id, []).append(item if expires is None else {**item, "expires_at": expires})
            else:
                new.append({"text": value_text(value), "user_id": user_id, "chat_id": self.chat_id, "metadata": meta,
                            "memory_type": self.memory_type, "expires_at": expires})
        fresh = sorted({row["user_id"] for row in new} - self._known)
        if fresh and self.user_id is None:
            self._known |= {r.text for r in self.memory.get_all(self._registry)}
            new += [{"text": u, "user_id": self._registry, "chat_id": self.chat_id, "memory_type": "procedural"}
                    for u in fresh if u not in self._known]
            self._known |= set(fresh)
        if new:
            self.memory.add_many(new)
        failed: list[str] = []
        for user_id, items in updates.items():
            for start in range(0, len(items), CHUNK):
                done = self.memory.update_many(items[start: start + CHUNK], user_id)
                failed += [f"{r.id}: {r.error}" for r in done.results if r.status not in ("ok", "unchanged")]
        for user_id, ids in deletes.items():
            for start in range(0, len(ids), CHUNK):
                self.memory.delete_many(ids[start: start + CHUNK], user_id)
        if failed:
            raise RuntimeError(f"{len(failed)} item(s) were not updated: {'; '.join(failed[:5])}")

    # ------------------------------------------------------------------ reading
    def _item(self, user_id: str, record: MemoryRecord) -> Item:
        meta = record.metadata
        created = to_datetime(meta.get("created_at", record.created_at))
        updated = to_datetime(meta.get(UPDATED) or meta.get("updated_at") or record.updated_at)
        return Item(namespace=self._namespace(user_id, record), key=meta[KEY], value=dict(meta.get(VALUE) or {}),
                    created_at=created, updated_at=updated)

    def _search_item(self, user_id: str, record: MemoryRecord, score: float | None = None) -> SearchItem:
        item = self._item(user_id, record)
        return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score=score)

    def _search(self, op: SearchOp, view: _View, query: Any) -> list[tuple[SearchItem, str, MemoryRecord]]:
        """The items under the prefix passing the filter; with a query, scored by cosine, best first,
        the unindexed after them (InMemoryStore's rule); then the page."""
        if op.limit < 0 or op.offset < 0:
            raise ValueError("limit and offset must be 0 or more")
        found: list[tuple[str, MemoryRecord]] = []
        for user_id, rest in self._users_under(tuple(op.namespace_prefix)):
            joined = ".".join(rest)
            for (ns, _key), record in view.items(user_id).items():
                if (not rest or ns == joined or ns.startswith(joined + ".")) and self._passes(record, op.filter):
                    found.append((user_id, record))
        if query is None:
            return [(self._search_item(u, r), u, r) for u, r in found[op.offset: op.offset + op.limit]]
        lazy = [(u, r) for u, r in found if not r.metadata.get(VEC) and r.metadata.get(INDEXED, True) and self.index.config is None]
        extra = dict(zip((r.id for _u, r in lazy), self.index.embed_documents([r.text for _u, r in lazy])))  # items put before lg_vec
        scored: list[tuple[float, str, MemoryRecord]] = []
        scoreless: list[tuple[float | None, str, MemoryRecord]] = []
        for user_id, record in found:
            score = best_score(query, record.metadata.get(VEC) or {}, extra.get(record.id))
            if score is not None:
                scored.append((score, user_id, record))
            else:
                scoreless.append((None, user_id, record))
        scored.sort(key=lambda hit: -hit[0])
        page: list[tuple[float | None, str, MemoryRecord]] = list(scored[op.offset: op.offset + op.limit])
        page += scoreless[: max(0, op.limit - len(page))] if len(page) < op.limit else []
        return [(self._search_item(u, r, score=s), u, r) for s, u, r in page]

    @staticmethod
    def _passes(record: MemoryRecord, wanted: dict[str, Any] | None) -> bool:
        value = record.metadata.get(VALUE) or {}
        return all(compare(value.get(field), w) for field, w in (wanted or {}).items())

    def _list(self, op: ListNamespacesOp, view: _View) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        fixed = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        seen: set[tuple[str, ...]] = set()
        for user_id, _rest in self._users_under(fixed[: len(self.prefix) + 1]):
            for record in view.items(user_id).values():
                seen.add(self._namespace(user_id, record))
        namespaces = [ns for ns in seen if all(matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset: op.offset + op.limit]
