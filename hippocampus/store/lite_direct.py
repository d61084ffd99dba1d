"""Queries and searches of a local milvus-lite store asked of its engine in this process, not through its gRPC server (issue 41).

Why: milvus-lite 3.x runs in the process that opens a `.db` path, but pymilvus reaches it through a gRPC
server that milvus-lite (or store/private.py) starts: a call is encoded by pymilvus, sent over a socket,
decoded by milvus-lite's servicer, answered by its engine (`Collection.get` for an `id in [...]`
expression, `Collection.query` for any other, `Collection.search`), and the rows go back the same way,
each field a protobuf column and each vector its floats built as Python objects on both sides. Reading
13 rows by id with their e5 vectors took 5.1 ms that way and 1.3 ms from the engine, a companion bucket
of 229 rows 29 against 10 ms (docs/performance.md, "Stop 53").

What this does: `call` and `search_call` hand a query with a limit, or a search of a dense vector field
(or of BM25's field, by text), to the engine method the servicer would have called with the same
arguments, and give the result back as pymilvus would (JSON fields decoded, vectors and distances as the float32 that travels over gRPC, a
search hit's entity holding the key when it was asked for); they fall back to pymilvus where no engine
of this path runs in this process (a server URI, another milvus-lite release), where a field's type is not
one of those mapped here, where the call asks for something else (every field, a count, an iterator,
search parameters, a hybrid search), or where the engine refused (its error is then raised by the same call through pymilvus).
Writes still go through pymilvus: sent straight to the engine, 10,000 companion rows left the process 45 MB
larger (the engine keeps the Python objects it is given), for ~1.4 ms an add.
An expression `(id in [...]) and (rest)`, as store/filters.py writes one, is read by id with `rest`
checked on the rows found (the engine's `get` takes an expression for them): the servicer does that for a
bare `id in [...]`, and for the conjunction the engine's `query` would give the same rows after checking
every row of the collection. `HIPPOCAMPUS_LITE_DIRECT=off` sends every call through pymilvus.
tests/store/test_lite_direct.py compares both paths on flushed and unflushed rows, upserts, deletes,
partitions, JSON and BM25 in both languages.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# The field types whose engine values are what pymilvus returns (JSON aside, decoded below). FLOAT and
# DOUBLE are left out: the engine may hold a double where pymilvus returns the float32 it was sent as.
MAPPED = frozenset({"INT8", "INT16", "INT32", "INT64", "VARCHAR", "BOOL", "JSON", "FLOAT_VECTOR"})
_IDS = re.compile(r"^\(?id in \[(-?\d+(?:, -?\d+)*)\]\)?$")
_IDS_AND = re.compile(r"^\(id in \[(-?\d+(?:, -?\d+)*)\]\) and (.+)$", re.S)


def enabled() -> bool:
    return os.environ.get("HIPPOCAMPUS_LITE_DIRECT", "").lower() not in ("off", "0", "no", "false")


def split_ids(expr: str) -> tuple[list[int], str] | None:
    """`id in [...]` alone or first in a conjunction of store/filters.py: (the ids, the rest or "");
    None for any other expression."""
    m = _IDS.match(expr)
    if m:
        return [int(x) for x in m.group(1).split(", ")], ""
    m = _IDS_AND.match(expr)
    if m and not _top_level_or(m.group(2)):
        return [int(x) for x in m.group(1).split(", ")], m.group(2)
    return None


def _top_level_or(expr: str) -> bool:
    """`expr` has an `or` outside every parenthesis and string (then `(ids) and a or b` is not `ids and (a or b)`)."""
    depth, quote, i = 0, "", 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            i += 2 if ch == "\\" else 1
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and expr.startswith((" or ", " OR ", " || "), i):
            return True
        i += 1
    return False


class Direct:
    """The engine of one local store's path, looked up at each call (a closed store's server is gone)."""

    def __init__(self, path: str):
        self.path = str(Path(path).expanduser().absolute())  # the key store/connection.py opened it under
        self._kinds: dict[str, tuple[Any, dict[str, str]]] = {}  # collection -> (its engine object, field -> type)

    def _engine(self) -> Any:
        try:
            import milvus_lite
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:  # pragma: no cover - a server URI without milvus-lite installed
            return None
        if not str(getattr(milvus_lite, "__version__", "")).startswith("3."):  # the release line this was written against
            return None
        entry = getattr(server_manager_instance, "_servers", {}).get(self.path)
        return entry[1] if entry and len(entry) == 3 else None

    def _fields(self, name: str, col: Any) -> dict[str, str] | None:
        """Each field's type name, read once per engine collection (one dropped and made again is another
        object), or None where this module does not map the collection (its key is not `id`). A collection
        with dynamic fields is mapped: a query naming schema fields only gets none of them either way."""
        known = self._kinds.get(name)
        if known is None or known[0] is not col:
            try:
                fields = col.schema.fields
                kinds = {f.name: getattr(f.dtype, "name", str(f.dtype)) for f in fields}
                if next(f.name for f in fields if f.is_primary) != "id":
                    kinds = {}
            except (AttributeError, StopIteration):
                kinds = {}
            known = self._kinds[name] = (col, kinds)
        return known[1] or None

    def call(self, fn: Any, name: str, *, filter: str = "", output_fields: Sequence[str] | None = None,
             limit: int | None = None, partition_names: list[str] | None = None, **rest: Any) -> Any:
        """`fn` (the client's `query`) with these arguments, answered by the engine where `query` can."""
        if not rest and output_fields and limit is not None and "count(*)" not in output_fields:
            rows = self.query(name, filter, output_fields, limit, partition_names)
            if rows is not None:
                return rows
        return fn(name, filter=filter, output_fields=output_fields, limit=limit, partition_names=partition_names, **rest)

    def _open(self, name: str, fields: Sequence[str]) -> tuple[Any, dict[str, str]] | None:
        """The engine's collection and its field types, where the switch is on, the engine runs here, and
        every field in `fields` (some must be named) is of a mapped type; else None."""
        db = self._engine() if enabled() and fields else None
        if db is None:
            return None
        try:
            col = db.get_collection(name)
        except Exception:  # no such collection: pymilvus says so
            return None
        kinds = self._fields(name, col)
        if kinds is None or any(kinds.get(f) not in MAPPED for f in fields):
            return None
        return col, kinds

    def query(self, name: str, expr: str, fields: Sequence[str], limit: int,
              partitions: list[str] | None = None) -> list[dict[str, Any]] | None:
        """The rows pymilvus' `query(name, filter=expr, output_fields=fields, limit=limit,
        partition_names=partitions)` returns, or None: ask pymilvus."""
        if (opened := self._open(name, fields)) is None:
            return None
        col, kinds = opened
        try:
            ids = split_ids(expr) if expr else None
            if ids is not None and (not ids[1] or limit >= len(ids[0])):  # else which rows fill a short page is the scan's
                rows = col.get(ids[0], partition_names=partitions, expr=ids[1] or None, output_fields=list(fields))
            else:
                rows = col.query(expr or None, output_fields=list(fields), partition_names=partitions, limit=limit)
        except Exception as exc:  # the engine's refusal (not loaded, a bad filter): pymilvus raises it as before
            log.debug("milvus-lite engine query of %s refused (%s): through pymilvus", name, exc)
            return None
        return [_as_pymilvus(row, kinds) for row in rows]

    def search_call(self, fn: Any, name: str, *, data: Any, limit: int, anns_field: str | None = None, filter: str = "",
                    output_fields: Sequence[str] = (), search_params: dict[str, Any] | None = None,
                    partition_names: list[str] | None = None, **rest: Any) -> Any:
        """`fn` (the client's `search`) with these arguments, answered by the engine where `search` can."""
        if not rest and set(search_params or {}) <= {"metric_type"}:
            hits = self.search(name, data, anns_field, limit, filter, output_fields, (search_params or {}).get("metric_type"),
                               partition_names)
            if hits is not None:
                return hits
        return fn(name, data=data, anns_field=anns_field, limit=limit, filter=filter, output_fields=output_fields,
                  search_params=search_params, partition_names=partition_names, **rest)

    def search(self, name: str, data: Any, anns_field: str | None, limit: int, expr: str, fields: Sequence[str],
               metric: str | None, partitions: list[str] | None = None) -> list[list[dict[str, Any]]] | None:
        """What pymilvus' `search` returns (hits with `id`, `distance` and `entity`) for query vectors of a dense
        field or texts of a BM25 function's field, or None: ask pymilvus (also where no field is named:
        pymilvus then returns every one). Query vectors and distances are float32, as they travel over gRPC."""
        if (opened := self._open(name, fields)) is None:
            return None
        col, kinds = opened
        if anns_field is None:  # the collection's one vector field
            vectors = [f for f, kind in kinds.items() if kind.endswith("VECTOR")]
            anns_field = vectors[0] if len(vectors) == 1 else None
        kind = kinds.get(anns_field or "")
        bm25 = kind == "SPARSE_FLOAT_VECTOR" and anns_field in (getattr(col, "_bm25_analyzers", None) or {})
        if not (kind == "FLOAT_VECTOR" or bm25 and isinstance(data, list) and data and all(isinstance(q, str) for q in data)):
            return None
        try:
            if bm25:  # text, which the engine's BM25 function turns into the query's terms, as for pymilvus
                queries = list(data)
            else:
                queries = np.asarray(data, dtype=np.float32).tolist()
                if not queries or not isinstance(queries[0], list):
                    return None
            res = col.search(query_vectors=queries, top_k=limit, metric_type=col.resolve_search_metric(anns_field, metric),
                             partition_names=partitions, expr=expr or None, output_fields=list(fields), anns_field=anns_field)
        except Exception as exc:  # the engine's refusal: pymilvus raises it as before
            log.debug("milvus-lite engine search of %s refused (%s): through pymilvus", name, exc)
            return None
        pk = "id" in fields  # pymilvus' entity holds the key when it was asked for; the engine's never does
        return [[{"id": h["id"], "distance": float(np.float32(h["distance"])),
                  "entity": {**({"id": h["id"]} if pk else {}), **_as_pymilvus(h.get("entity") or {}, kinds)}}
                 for h in hits] for hits in res]


def _as_pymilvus(row: dict[str, Any], kinds: dict[str, str]) -> dict[str, Any]:
    """A fresh row as pymilvus decodes it: JSON fields parsed, vectors copied (the engine's are its own)."""
    out = {}
    for key, value in row.items():
        kind = kinds.get(key)
        if kind == "JSON" and isinstance(value, (str, bytes)):
            value = json.loads(value)
        elif kind == "JSON" and value is not None:
            value = json.loads(json.dumps(value))
        elif kind == "FLOAT_VECTOR" and value is not None:  # float32, as sent over gRPC
            value = np.asarray(value, dtype=np.float32).tolist()
        out[key] = value
    return out
