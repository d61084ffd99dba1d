"""The cross-language vectors (schema version 5): one row per memory in the companion collection
`<name>_xvec` (the memory's id, its user and kind, and `xvector`, its embedding by the cross-language
model of embeddings/crosslang.py), read by the cross-language stage (retrieval/crosslang.py).

Why a companion collection and not a second vector field of the memories collection (version 4 did
that): milvus-lite evaluates a filtered search over every column of its in-memory rows, so a 512-d
field in the memories collection made every BM25 search slower, and e5's dense search too
(docs/crosslang.md, "Cost"); and Milvus 2.3 refuses a collection with two vector
fields. The memories collection keeps the version-3 layout.

Why here, at the store's write door: memories are written by a dozen paths (add, consolidation,
compression, restore, undo, import...); MilvusStore.insert/upsert/delete call `written` and `removed`,
so every one of them keeps the companion right without knowing it. A collection that has the
companion gets it on every write, whatever the setting; the setting (`crosslang_embedder`) decides
whether a new store is made with it and whether search uses it.

Nearest neighbours, cosines and "does this user have a memory in that script": always read from the
companion in Milvus, in the user's bucket (store/buckets.py), on a server and on a local path alike, so a
write is seen by the next search, whatever user it is for. A local store once also kept an in-memory copy
of every user's vectors, filled by a background read; a user whose first memory was written during that
read got an empty copy until the process restarted (issue 56: a Chinese memory never found by an English
question). One read path has no such window; what it costs per search: docs/crosslang.md, "Cost".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..errors import SchemaMismatchError
from ..text import script_of
from . import filters as F
from .backend import StoreClient, keyed, kinds
from .buckets import NUM_BUCKETS, PROP_BUCKETS, bucket_of, ensure_bucket
from .capabilities import Capabilities
from .schema import ID_MAX_LEN, PROP_CROSS, XVECTOR

log = logging.getLogger(__name__)

SUFFIX = "_xvec"
# Companion rows upserted per call, as the embedder's chunks. Each row's 512 floats become Python objects on
# both sides of milvus-lite's in-process gRPC call, so a small page bounds what is held at once for little
# more time a call; larger or smaller pages did not move a whole process's peak (docs/decisions.md,
# "The companion's pages").
WRITE_PAGE = 64


class CrossHost(Protocol):
    """What the companion uses of its MilvusStore (store/milvus.py)."""

    uri: str
    collection: str
    client: StoreClient
    _lock: threading.RLock

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any: ...
    def count(self, filter_expr: str = "", partition: str | None = None) -> int: ...
    def iterate(self, filter_expr: str, fields: Sequence[str] = ..., batch: int = ..., partition: str | None = None) -> Any: ...
    def partition_for(self, user_id: str) -> str | None: ...
    def _create_collection(self, name: str, schema: Any = None, index_params: Any = None, **kwargs: Any) -> None: ...


def xvec_schema(c: StoreClient, dim: int, index_type: str = "AUTOINDEX") -> tuple[Any, Any]:
    """The companion's schema and index (`index_type`: Capabilities.companion_index)."""
    DataType = kinds(c).DataType
    schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)  # the memory's id
    schema.add_field("user_id", DataType.VARCHAR, max_length=ID_MAX_LEN)
    schema.add_field("memory_type", DataType.VARCHAR, max_length=32)
    schema.add_field("script", DataType.VARCHAR, max_length=8)  # text.script_of: the stage wants the other scripts
    schema.add_field(XVECTOR, DataType.FLOAT_VECTOR, dim=dim)
    index = c.prepare_index_params()
    index.add_index(XVECTOR, index_type=index_type, metric_type="COSINE")
    return schema, index


def xvec_row(row: dict[str, Any], memory_id: int, vec: Any) -> dict[str, Any]:
    """The companion's row of a memory."""
    return {"id": int(memory_id), "user_id": row["user_id"], "memory_type": row["memory_type"],
            "script": script_of(str(row.get("text") or "")), XVECTOR: np.asarray(vec, dtype=np.float32).tolist()}


class CrossVectors:
    """What the store knows of the cross-language vectors: whether its companion exists and is complete,
    and the embedder that fills it. The vectors themselves are only ever read from Milvus."""

    def __init__(self, host: CrossHost, wanted: Any = None):
        self.host = host
        self.wanted = wanted  # the configured cross-language embedder, or None (setting null)
        self.embedder: Any = None  # the one that fills the companion
        self.name = host.collection + SUFFIX
        self.filled = False  # the companion exists: every write keeps it current
        self.present = False  # ... and holds every memory (made with the store, or a finished reembed)
        self.legacy = False  # a version-4 collection with `xvector` inside: written, never searched
        self.writes = 0  # writes through the store so far (local stores: what a cached count is keyed on)
        self._made = False
        self.bucketed = False  # made with the user buckets (PROP_BUCKETS): a user's reads scan their bucket only
        self._buckets: set[str] = set()  # its bucket partitions known to exist
        self._create_kwargs: dict[str, Any] = {}
        self._index_type = "AUTOINDEX"

    @property
    def new_props(self) -> dict[str, str]:
        """The memories collection's properties when it is made now: the companion's model."""
        return {PROP_CROSS: self.wanted.model_name} if self.wanted is not None else {}

    @property
    def active(self) -> bool:
        """Search may use the companion: it is complete and the setting asks for it."""
        return self.present and self.wanted is not None

    def opened(self, info: dict[str, Any] | None, caps: Capabilities) -> None:
        """After the memories collection was opened (`info`) or made (None): find or make the companion.

        The memories collection names the companion's model (PROP_CROSS) when the companion holds every
        memory: it was made with it, or `hippocampus reembed --crosslang` finished filling it."""
        c = self.host.client
        props = {} if info is None else (info.get("properties") or {})
        self.legacy = info is not None and XVECTOR in {f["name"] for f in info.get("fields", [])}
        # named by the memories: opened on first use (`_ensure`), as milvus-lite reads a collection's every
        # segment when it is first touched (slow on a large store), which list, get, stats or export never need
        named = info is not None and not self.legacy and PROP_CROSS in props
        exists = False if named else c.has_collection(self.name)
        if info is None and exists:  # left by a memories collection of the same name that was dropped
            c.drop_collection(self.name)
            exists = False
        complete = not self.legacy and (info is None and self.wanted is not None or PROP_CROSS in props)
        if not (complete or exists or self.legacy):
            if self.wanted is not None:
                log.warning("collection %r has no cross-language vectors yet; searching as before "
                            "(run `hippocampus reembed --crosslang` to add them)", self.host.collection)
            return
        found = props.get(PROP_CROSS) if info is not None else None
        self.embedder = self._embedder_for(found or self._companion_model(exists))
        if self.legacy:
            log.warning("collection %r keeps its cross-language vectors inside (schema version 4), where they are "
                        "not searched: run `hippocampus reembed --crosslang` to move them", self.host.collection)
        self.filled, self.present = True, complete
        self._create_kwargs, self._index_type = caps.create_kwargs(), caps.companion_index
        if exists:
            self._ensure(create=False)  # loads it

    def _ensure(self, create: bool) -> bool:
        """The companion exists (made on first write, like the graph's: a store never written pays nothing);
        another replica may have made it since we looked. A new one is split into the memories' user
        buckets (store/buckets.py): milvus-lite evaluates a filter row by row, so a user's search, cosine read
        and existence check scanned every memory of the store instead of one bucket (docs/crosslang.md); an
        older companion keeps its single partition."""
        if not self._made and (create or self.host.client.has_collection(self.name)):
            schema, index = xvec_schema(self.host.client, self.embedder.dim, self._index_type)
            self.host._create_collection(self.name, schema=schema, index_params=index, **self._create_kwargs,
                                         properties={PROP_CROSS: self.embedder.model_name, PROP_BUCKETS: str(NUM_BUCKETS)})
            props = self.host.client.describe_collection(self.name).get("properties") or {}
            self.bucketed = props.get(PROP_BUCKETS) == str(NUM_BUCKETS)  # made here, or as it was found
            self._buckets = set(self.host.client.list_partitions(self.name))
            self._made = True
        return self._made

    def _scan(self, user_id: str) -> list[str] | None:
        """The partitions a read of this user's rows names (under the store's lock): their bucket, [] when
        that bucket does not exist yet (the user has no row), None in an older companion (all of it)."""
        if not self.bucketed:
            return None
        name = bucket_of(user_id)
        return [name] if ensure_bucket(self.host._call, self.name, self._buckets, name, create=False) else []

    def _companion_model(self, exists: bool) -> str | None:
        if not exists:
            return None
        return (self.host.client.describe_collection(self.name).get("properties") or {}).get(PROP_CROSS)

    def _embedder_for(self, model: str | None) -> Any:
        from ..embeddings.crosslang import MODEL_NAME, NAME, make_crosslang

        if self.wanted is not None:
            if model is not None and model != self.wanted.model_name:
                raise SchemaMismatchError(f"collection {self.host.collection!r} holds cross-language vectors from "
                                          f"{model!r}, but crosslang_embedder names {self.wanted.model_name!r}")
            return self.wanted
        if model not in (None, MODEL_NAME):
            raise SchemaMismatchError(f"collection {self.host.collection!r} holds cross-language vectors from an "
                                      f"unknown model {model!r}")
        return make_crosslang(NAME)  # loads only when a memory is written

    # ------------------------------------------------------------ writes (MilvusStore calls these)
    def encode(self, rows: Sequence[dict[str, Any]]) -> np.ndarray | None:
        """The rows' cross vectors, from their text, when the store keeps them (else None: none kept, or no
        rows). Embedded by the writer before the store's lock and written with the memories, in the same
        call, on every store: no thread writes behind the add (issue 56: a write left for a background
        thread at exit went through milvus-lite's gRPC after the interpreter had shut its workers, and hung)."""
        if not rows or not (self.filled or self.legacy):
            return None
        return self.embedder.encode([str(r.get("text") or "") for r in rows], role="passage")

    def inline(self, rows: Sequence[dict[str, Any]], vecs: np.ndarray | None) -> Sequence[dict[str, Any]]:
        """A version-4 collection's rows need `xvector` (the field is not nullable)."""
        if not self.legacy or vecs is None:
            return rows
        return [{**r, XVECTOR: v.tolist()} for r, v in zip(rows, vecs)]

    def written(self, rows: Sequence[dict[str, Any]], ids: Sequence[int], vecs: np.ndarray | None, fresh: bool = False) -> None:
        """After the memories were written: their rows in the companion (under the store's lock). `fresh`:
        ids the store has just allocated (an insert), which the companion cannot hold yet, so their rows are
        inserted: milvus-lite's upsert looks every id up first, which a new id need not pay."""
        self.writes += 1  # called by every insert and upsert, whether the store keeps cross vectors or not
        if not self.filled or vecs is None or not rows:
            return
        self._put(rows, ids, vecs, fresh)

    def _put(self, rows: Sequence[dict[str, Any]], ids: Sequence[int], vecs: np.ndarray, fresh: bool) -> None:
        """The rows in the companion, a page at a time (under the store's lock)."""
        self._ensure(create=True)
        for start in range(0, len(rows), WRITE_PAGE):  # 512 Python floats a row: a page at a time, not the whole batch
            end = start + WRITE_PAGE
            data = [xvec_row(r, i, v) for r, i, v in zip(rows[start:end], ids[start:end], vecs[start:end])]
            self._write("insert" if fresh else "upsert", data)

    def _write(self, method: str, data: list[dict[str, Any]]) -> None:
        write_rows(self.host._call, self.name, self._buckets if self.bucketed else None, method, data)

    def removed(self, ids: Sequence[int]) -> None:
        """After memories were deleted: their cross vectors go too (an embedding is a trace of the text)."""
        self.writes += 1
        if not self.filled or not ids or not self._ensure(create=False):
            return
        for start in range(0, len(ids), 1000):
            self.host._call("delete", self.name, filter=F.in_("id", [int(i) for i in ids[start:start + 1000]]))

    # ------------------------------------------------------------ search
    def nearest(self, user_id: str, qx: Sequence[float], kinds: Sequence[str] | None, scripts: Sequence[str],
                k: int) -> list[tuple[int, float]]:
        """The user's `k` memories (of `kinds`, written in `scripts`) nearest the query's cross vector:
        (id, cosine), best first, searched by Milvus in the user's bucket."""
        q = _units([qx])[0]
        if not scripts:
            return []
        if not self._made:
            with self.host._lock:
                if not self._ensure(create=False):
                    return []
        flt = F.and_(F.eq("user_id", user_id), F.in_("script", list(scripts)), F.in_("memory_type", list(kinds)) if kinds else None)
        with self.host._lock:
            parts = self._scan(user_id)
            if parts == []:
                return []
            res = self.host._call("search", self.name, data=[q.tolist()], anns_field=XVECTOR, filter=flt, limit=k,
                                  output_fields=["id"], search_params={"metric_type": "COSINE"}, partition_names=parts)
        return [(int(h["id"]), float(h["distance"])) for h in res[0]]

    def cosines(self, user_id: str, ids: Sequence[int], qx: Sequence[float]) -> dict[int, float]:
        """These memories' cosines with the query's cross vector (those the companion holds)."""
        q = _units([qx])[0]
        if not ids or not self._made:
            return {}
        with self.host._lock:
            parts = self._scan(user_id)
            if parts == []:
                return {}
            keys = list(dict.fromkeys(int(i) for i in ids))  # by key: backend.keyed
            rows = self.host._call("query", self.name, **keyed(self.host.client, keys, F.eq("user_id", user_id)),
                                   output_fields=["id", XVECTOR], partition_names=parts)
        return {int(r["id"]): float(_units([r[XVECTOR]])[0] @ q) for r in rows}

    def holds(self, user_id: str, scripts: Sequence[str], ask: bool = True) -> bool:
        """Whether the user has a memory written in one of `scripts` (the stage embeds the question by the
        cross-language model only then: a CLI search of a one-language store never loads it). A query of
        Milvus (one row at most, in the user's bucket), or, with `ask` False, True (maybe): the stage
        passes False once the model is loaded, when embedding the question costs less than asking."""
        if not scripts:
            return False
        with self.host._lock:
            if not self._ensure(create=False):
                return False
            if not ask:
                return True
            parts = self._scan(user_id)
            if parts == []:
                return False
            rows = self.host._call("query", self.name, filter=F.and_(F.eq("user_id", user_id), F.in_("script", list(scripts))),
                                   output_fields=["id"], limit=1, partition_names=parts)
        return bool(rows)

    # ------------------------------------------------------------ completeness
    def missing(self, user_id: str | None = None) -> int | None:
        """How many memories (of `user_id`, or all) lack a companion row, or None where the store keeps no
        cross vectors: a process killed between a memory's write and its row's leaves one (`hippocampus
        reembed --crosslang` fills them). Two counts first; only where they differ are both collections' ids
        read (too slow for every `stats` on a large store), since a row left by a delete killed
        the same way offsets the difference (equal leftovers of both kinds would read as 0)."""
        scope = F.eq("user_id", user_id) if user_id is not None else ""
        if not self.filled:  # an older store, not filled yet: none of its memories has one
            return self.host.count(scope) if self.wanted is not None else None
        part = self.host.partition_for(user_id) if user_id is not None else None
        if user_id is not None and part is None:
            return 0  # the user has no bucket: no memory
        total = self.host.count(scope, partition=part)
        if total == self._count(scope, user_id):
            return 0
        mine = {int(r["id"]) for page in self.host.iterate(scope, ["id"], partition=part) for r in page}
        return len(mine - self._ids(scope, user_id)) if mine else 0

    def _count(self, scope: str, user_id: str | None) -> int:
        """The companion's rows matching `scope`."""
        with self.host._lock:
            parts = (self._scan(user_id) if user_id is not None else None) if self._ensure(create=False) else []
            if parts == []:
                return 0
            res = self.host._call("query", self.name, filter=scope, output_fields=["count(*)"], partition_names=parts)
        return int(res[0]["count(*)"])

    def _ids(self, scope: str, user_id: str | None) -> set[int]:
        """The memory ids the companion holds (matching `scope`), a page at a time."""
        with self.host._lock:
            parts = (self._scan(user_id) if user_id is not None else None) if self._ensure(create=False) else []
            if parts == []:
                return set()
            it = self.host._call("query_iterator", self.name, batch_size=4096, filter=scope, output_fields=["id"],
                                 partition_names=parts)
        have: set[int] = set()
        try:
            while True:
                with self.host._lock:
                    page = it.next()
                if not page:
                    return have
                have.update(int(r["id"]) for r in page)
        finally:
            it.close()


def _units(vecs: Any) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero): the companion's cosines are dot products."""
    m = np.asarray(vecs, dtype=np.float32).reshape(len(vecs), -1)
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(n > 0, n, 1.0)


def write_rows(call: Any, name: str, buckets: set[str] | None, method: str, data: list[dict[str, Any]]) -> None:
    """Insert or upsert companion rows (`call(method, *args)`: the client's call), each into its user's
    bucket when the companion has them (`buckets`: those known to exist, else None)."""
    if buckets is None:
        call(method, name, data=data)
        return
    by_bucket: dict[str, list[dict[str, Any]]] = {}
    for d in data:
        by_bucket.setdefault(bucket_of(str(d["user_id"])), []).append(d)
    for part, rows in by_bucket.items():
        ensure_bucket(call, name, buckets, part, create=True)
        call(method, name, data=rows, partition_name=part)
