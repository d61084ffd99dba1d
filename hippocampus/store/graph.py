"""The graph's companion collection `<name>_graph`: entities, triples and the extraction ledger of
each user, beside the memories in the same Milvus (one URI is still the whole state).

Every row belongs to one user and names the memories that support it (`supports`, memory ids of
that user). Three kinds share the collection:
- `entity`: a name and its type, its vector (the name embedded), the memories that mention it;
- `triple`: subject / predicate / object with negation, frequency and condition, the
  memories that state it; its vector is the triple as a sentence;
- `memory`: the ledger, one row per memory the extractor has read, with a hash of the text it read
  (a memory whose text changed since is read again).

Primary keys are hashes of (user, kind, normalised names), so writing the same entity twice is one
row. When memories are deleted (any path: delete, merge, forget, a user's reset) `drop_supports`
removes their ids from every row of their user in the same operation and deletes the rows with no
support left (the cascade: a triple lives as long as a memory states it). The collection is made on first write: a store that never builds
a graph never pays for it.
"""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from . import filters as F
from .backend import StoreClient, kinds
from .schema import ID_MAX_LEN


class GraphHost(Protocol):
    """What the graph collection uses of its MilvusStore (store/milvus.py), named here so that this
    module need not import the store that imports it."""

    client: StoreClient
    collection: str
    dim: int
    _lock: threading.RLock

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any: ...
    def _create_collection(self, name: str, **kwargs: Any) -> None: ...
    def add_history(self, events: Sequence[dict[str, Any]]) -> list[int]: ...

KINDS = ("entity", "triple", "memory")
MAX_SUPPORTS = 4096  # Milvus's largest ARRAY capacity: an entity named in more memories keeps the newest ids
NAME_BYTES = 512
PART_BYTES = 256
GRAPH_FIELDS = ["key", "user_id", "kind", "name", "etype", "subject", "predicate", "object", "negated", "frequency",
                "condition", "supports", "first_seen", "last_seen", "updated_at"]
_PAGE = 1000


def norm(text: str) -> str:
    """The matching form of a name: NFKC, case-folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", str(text)).casefold().split())


def row_key(user_id: str, kind: str, *parts: str) -> str:
    """The primary key of a row: the same user, kind and names give the same key."""
    raw = "\x1f".join([user_id, kind, *(norm(p) for p in parts)])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:40]


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, on a character boundary."""
    data = str(text).encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def graph_schema(c: StoreClient, dim: int) -> tuple[Any, Any]:
    DataType = kinds(c).DataType
    schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("key", DataType.VARCHAR, max_length=64, is_primary=True)
    schema.add_field("user_id", DataType.VARCHAR, max_length=ID_MAX_LEN)
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field("name", DataType.VARCHAR, max_length=NAME_BYTES)
    schema.add_field("etype", DataType.VARCHAR, max_length=32)
    for part in ("subject", "predicate", "object", "condition"):
        schema.add_field(part, DataType.VARCHAR, max_length=PART_BYTES)
    schema.add_field("negated", DataType.BOOL)
    schema.add_field("frequency", DataType.VARCHAR, max_length=64)
    schema.add_field("supports", DataType.ARRAY, element_type=DataType.INT64, max_capacity=MAX_SUPPORTS)
    schema.add_field("first_seen", DataType.INT64)  # the earliest supporting memory's time (Graphiti-style valid time)
    schema.add_field("last_seen", DataType.INT64)
    schema.add_field("updated_at", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    index = c.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    return schema, index


def blank_row(user_id: str, kind: str, key: str, dim: int) -> dict[str, Any]:
    """A row with every field at its empty value (Milvus needs them all); the caller fills it in."""
    vector = [0.0] * dim
    vector[0] = 1.0  # a ledger row has no meaning to embed; a unit vector keeps cosine defined
    return {"key": key, "user_id": user_id, "kind": kind, "name": "", "etype": "", "subject": "", "predicate": "",
            "object": "", "negated": False, "frequency": "", "condition": "", "supports": [], "first_seen": 0,
            "last_seen": 0, "updated_at": 0, "vector": vector}


class GraphCollection:
    """Typed access to `<name>_graph`, through its MilvusStore's client and lock."""

    def __init__(self, store: GraphHost):
        self.store = store
        self.name = f"{store.collection}_graph"
        self._exists = False
        # read-modify-write of supports (a build adding ids, a delete removing them) happens under this lock
        self.lock = threading.RLock()

    def exists(self) -> bool:
        """Whether the collection is there (asked again until it is: another process may make it)."""
        if not self._exists:
            with self.store._lock:
                self._exists = bool(self.store._call("has_collection", self.name))
                if self._exists:
                    self.store._call("load_collection", self.name)
        return self._exists

    def ensure(self) -> None:
        if self.exists():
            return
        schema, index = graph_schema(self.store.client, self.store.dim)
        with self.store._lock:
            self.store._create_collection(self.name, schema=schema, index_params=index)
            self.store._call("load_collection", self.name)
        self._exists = True

    def rows(self, user_id: str, kind: str | None = None, extra: str = "", fields: Sequence[str] = GRAPH_FIELDS) -> list[dict[str, Any]]:
        """Every row of `user_id` (of one kind, matching `extra`), paged; [] without a collection."""
        if not self.exists():
            return []
        parts = [F.eq("user_id", user_id)] + ([F.eq("kind", kind)] if kind else []) + ([extra] if extra else [])
        return self._scan(F.and_(*parts), fields)

    def count(self, user_id: str, kind: str) -> int:
        if not self.exists():
            return 0
        with self.store._lock:
            res = self.store._call("query", self.name, filter=F.and_(F.eq("user_id", user_id), F.eq("kind", kind)),
                                   output_fields=["count(*)"])
        return int(res[0]["count(*)"])

    def by_keys(self, keys: Sequence[str], fields: Sequence[str] = GRAPH_FIELDS) -> dict[str, dict[str, Any]]:
        if not keys or not self.exists():
            return {}
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), _PAGE):
            chunk = list(keys[start:start + _PAGE])
            with self.store._lock:
                found = self.store._call("query", self.name, ids=chunk, output_fields=list(fields))  # by key: no scan
            out.update({r["key"]: dict(r) for r in found})
        return out

    def write(self, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        self.ensure()
        for row in rows:
            if len(row["supports"]) > MAX_SUPPORTS:
                row["supports"] = sorted(row["supports"])[-MAX_SUPPORTS:]
        with self.store._lock:
            for start in range(0, len(rows), _PAGE):
                self.store._call("upsert", self.name, data=list(rows[start:start + _PAGE]))

    def delete_keys(self, keys: Sequence[str]) -> None:
        if not keys or not self.exists():
            return
        with self.store._lock:
            for start in range(0, len(keys), _PAGE):
                self.store._call("delete", self.name, filter=F.in_("key", list(keys[start:start + _PAGE])))

    def search(self, user_id: str, vector: Sequence[float], kind: str, limit: int) -> list[dict[str, Any]]:
        """The rows of one kind of `user_id` nearest to `vector`, each with `similarity`."""
        if not self.exists():
            return []
        with self.store._lock:
            res = self.store._call("search", self.name, data=[list(vector)], limit=limit,
                                   filter=F.and_(F.eq("user_id", user_id), F.eq("kind", kind)), output_fields=GRAPH_FIELDS)
        return [{**dict(h.get("entity") or {}), "similarity": float(h.get("distance", 0.0))} for h in (res[0] if res else [])]

    def drop_supports(self, owners: dict[int, str]) -> list[dict[str, Any]]:
        """Remove the memory ids in `owners` (id -> its user) from their users' rows; delete the rows
        left with no support. Returns the rows deleted (as they were). A row of another user is never
        touched, whatever ids it lists."""
        if not owners or not self.exists():
            return []
        by_user: dict[str, list[int]] = {}
        for memory_id, user_id in owners.items():
            by_user.setdefault(user_id, []).append(int(memory_id))
        deleted: list[dict[str, Any]] = []
        with self.lock:
            for user_id, ids in by_user.items():
                deleted += self._drop(user_id, ids)
        return deleted

    def _drop(self, user_id: str, ids: list[int]) -> list[dict[str, Any]]:
        """One user's part of drop_supports (under the lock)."""
        deleted: list[dict[str, Any]] = []
        gone = set(ids)
        for start in range(0, len(ids), _PAGE):
            chunk = ids[start:start + _PAGE]
            touched = self._scan(F.and_(F.eq("user_id", user_id), F.contains_any("supports", chunk)), GRAPH_FIELDS + ["vector"])
            kept = [{**r, "supports": [s for s in r["supports"] if s not in gone]} for r in touched]
            self.write([r for r in kept if r["supports"]])
            empty = [{**r, "_was": before["supports"]} for r, before in zip(kept, touched) if not r["supports"]]
            self.delete_keys([r["key"] for r in empty])
            deleted += empty
        return deleted

    def cascade(self, owners: dict[int, str]) -> None:
        """After memories were deleted: drop their supports, and record in each memory's history the
        graph rows that went with it (one `graph_pruned` event per memory that took rows away)."""
        deleted = self.drop_supports(owners)
        if not deleted:
            return
        from ..models import HistoryAction, HistoryEvent

        events = []
        for memory_id, user_id in owners.items():
            names = [r["name"] for r in deleted if r["user_id"] == user_id and r["kind"] != "memory"
                     and memory_id in r.get("_was", ())]
            if names:
                events.append(HistoryEvent(memory_id=memory_id, user_id=user_id, action=HistoryAction.GRAPH_PRUNED, actor="graph",
                                           details={"removed": names[:200], "count": len(names)}).model_dump(mode="json"))
        self.store.add_history(events)

    def _scan(self, filter_expr: str, fields: Sequence[str]) -> list[dict[str, Any]]:
        with self.store._lock:
            it = self.store._call("query_iterator", self.name, batch_size=_PAGE, filter=filter_expr, output_fields=list(fields))
        out: list[dict[str, Any]] = []
        try:
            while True:
                with self.store._lock:
                    page = it.next()
                if not page:
                    return out
                out.extend(_plain(r) for r in page)
        finally:
            it.close()


def _plain(row: Any) -> dict[str, Any]:
    """A row with plain Python values (Milvus hands ARRAY fields back as its own sequence type)."""
    out = dict(row)
    if "supports" in out:
        out["supports"] = [int(s) for s in (out["supports"] or [])]
    if "vector" in out:
        out["vector"] = [float(x) for x in out["vector"]]
    return out


def owners_of(rows: Iterable[dict[str, Any]]) -> dict[int, str]:
    return {int(r["id"]): str(r["user_id"]) for r in rows}
