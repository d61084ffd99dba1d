"""milvus-lite's in-memory table read column by column, not cell by cell (issue 41).

Why: milvus-lite 3.x keeps the rows written since its last flush (up to the memtable budget,
store/connection.py) as Arrow record batches, and two of its paths turn them into Python objects one
cell at a time: every search calls `MemTable.to_search_snapshot`, which converts the vector of every
unflushed row in scope with `.as_py()` (512 Python floats a row for the cross-language companion, whose
searches name no partition), and every flush builds its table through `_build_data_table`, which does
the same for every cell of every row and then builds the table again from those objects (a flush of 8 MB
held ~90 MB of Python objects at its peak, memray). A search of a collection with a few thousand unflushed
rows spent most of its time in those conversions (`python scripts/profile_memtable.py`, docs/performance.md).

What this does: the two methods are replaced by versions that select the same rows, in the same order,
with Arrow's `take` (the way milvus-lite's own `to_arrow_table` already reads them) and hand the
vectors to numpy as one block; a search that names partitions picks whole batches by their partition (each
insert call is one batch of one partition), so the one-row batches of a chat hook's single adds are not
walked row by row. The results are equal to the originals' (tests/store/test_lite_memtable.py
compares them on random tables: upserts, deletes, partitions, nullable and JSON fields); anything the
column path does not cover (a nullable vector holding nulls, a vector field that is not a float list,
batches of different schemas) goes to the original method. Installed once, for local stores only, and
only on the milvus-lite release line it was written against (3.x, where both methods exist);
`HIPPOCAMPUS_LITE_MEMTABLE=off` leaves milvus-lite as it ships (for a comparison, or a release that
changed underneath).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
_LOCK = threading.Lock()
ORIGINAL: dict[str, Any] = {}  # method name -> milvus-lite's own function, once installed


def patchable(module: str, name: str, methods: tuple[str, ...]) -> Any:
    """milvus-lite's class `name` (in `module`) when this package may replace its methods: the switch is not
    off (HIPPOCAMPUS_LITE_MEMTABLE), milvus-lite is installed, of the 3.x release line these replacements were
    written against, and the class has `methods`; else None, and milvus-lite runs as it ships."""
    if os.environ.get("HIPPOCAMPUS_LITE_MEMTABLE", "").lower() in ("off", "0", "no", "false"):
        return None
    try:
        import importlib

        import milvus_lite

        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # pragma: no cover - a server URI without milvus-lite installed
        return None
    version = str(getattr(milvus_lite, "__version__", ""))
    if not version.startswith("3.") or not all(hasattr(cls, m) for m in methods):
        log.debug("milvus-lite %s: its %s runs as shipped", version, name)
        return None
    return cls


def install() -> bool:
    """Replace the two MemTable methods (once per process); False where this milvus-lite is not the
    release line they were written against, which then runs unchanged."""
    with _LOCK:
        if ORIGINAL:
            return True
        MemTable = patchable("milvus_lite.storage.memtable", "MemTable", ("to_search_snapshot", "_build_data_table"))
        if MemTable is None:
            return False
        ORIGINAL["to_search_snapshot"] = MemTable.to_search_snapshot
        ORIGINAL["_build_data_table"] = MemTable._build_data_table
        MemTable.to_search_snapshot = to_search_snapshot
        MemTable._build_data_table = build_data_table
        return True


def _flat_indices(batches: tuple[Any, ...], refs: list[tuple[int, int]]) -> Any:
    """(batch_idx, row_idx) pairs -> row numbers in the batches laid end to end, as an Arrow int64 array."""
    import pyarrow as pa

    offsets = np.zeros(len(batches) + 1, dtype=np.int64)
    np.cumsum([b.num_rows for b in batches], out=offsets[1:])
    b = np.fromiter((r[0] for r in refs), dtype=np.int64, count=len(refs))
    r = np.fromiter((r[1] for r in refs), dtype=np.int64, count=len(refs))
    return pa.array(offsets[b] + r if len(refs) else np.zeros(0, dtype=np.int64), type=pa.int64())


def _vector_block(column: Any) -> np.ndarray | None:
    """A FixedSizeList<float32> column as an (n, dim) float32 array; None for anything else or nulls."""
    import pyarrow as pa

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_fixed_size_list(column.type) or not pa.types.is_float32(column.type.value_type) or column.null_count:
        return None
    flat = column.flatten()
    if flat.null_count:
        return None
    return flat.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(column), column.type.list_size)


def to_search_snapshot(self: Any, vector_field: str | None, partition_names: list[str] | None = None,
                       include_table: bool = False) -> tuple[list[Any], np.ndarray, np.ndarray, list[tuple[int, int]], Any]:
    """MemTable.to_search_snapshot, column by column: the live rows in `_pk_index` order (those of
    `partition_names`), their seqs, their vectors as one block, their (batch, row) refs, and the table
    the filter is evaluated on when asked. Same lock discipline: one consistent view of the batches
    and the index, taken under the MemTable's lock (both are append-only or replaced, never mutated)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    with self._lock:
        batches = tuple(self._insert_batches)
        items = tuple(self._pk_index.items())
    if not batches or not items:
        return ORIGINAL["to_search_snapshot"](self, vector_field, partition_names, include_table)
    refs = [(pos[0], pos[1]) for _, pos in items]
    keep = None
    used = batches
    if partition_names is not None:
        wanted = set(partition_names)
        parts = _batch_partitions(self, batches)
        if None not in parts:  # every batch holds one partition (each is one insert call's): pick batches, not rows
            good = np.fromiter((p in wanted for p in parts), dtype=bool, count=len(parts))
            keep = good[np.fromiter((r[0] for r in refs), dtype=np.int64, count=len(refs))]
            renumber = np.cumsum(good) - 1  # a kept batch's place among the kept ones
            used = tuple(b for b, g in zip(batches, good) if g)
            refs_used = [(int(renumber[r[0]]), r[1]) for r, k in zip(refs, keep) if k]
    try:
        full = pa.Table.from_batches(used, schema=batches[0].schema) if used else None
    except pa.ArrowInvalid:  # batches of different schemas (a field added since): as milvus-lite reads them
        return ORIGINAL["to_search_snapshot"](self, vector_field, partition_names, include_table)
    if full is not None and full.num_rows and full.column(0).num_chunks > 32:
        full = full.combine_chunks()  # one copy; a take over thousands of one-row chunks (single adds) costs more
    if keep is not None:
        idx = _flat_indices(used, refs_used)
    else:
        idx = _flat_indices(batches, refs)
        if partition_names is not None:  # a batch of several partitions: row by row, as milvus-lite does
            keep = pc.is_in(full.column("_partition").take(idx), value_set=pa.array(list(wanted), type=pa.string()))
            keep = keep.combine_chunks().to_numpy(zero_copy_only=False)
            idx = pa.array(idx.to_numpy()[keep], type=pa.int64())
    chosen = range(len(items)) if keep is None else np.flatnonzero(keep)
    pks = [items[i][0] for i in chosen]
    seqs = np.fromiter((items[i][1][2] for i in chosen), dtype=np.uint64, count=len(pks))
    row_refs = [refs[i] for i in chosen]
    if vector_field is not None and pks:
        vectors = _vector_block(full.column(vector_field).take(idx))
        if vectors is None:
            return ORIGINAL["to_search_snapshot"](self, vector_field, partition_names, include_table)
    else:
        vectors = np.zeros((0, 0), dtype=np.float32)
    table = None
    if include_table:
        table = full.take(idx) if pks else self._data_schema.empty_table()
        if "_partition" in table.column_names:
            table = table.drop(["_partition"])
    return pks, seqs, vectors, row_refs, table


def _batch_partitions(self: Any, batches: tuple[Any, ...]) -> list[str | None]:
    """The one partition of each batch (None for a batch whose rows are in several), kept on the MemTable
    and extended as batches come: a MemTable's batches are only ever appended (a flush replaces the
    whole MemTable), and milvus-lite writes each insert call as one batch of one partition."""
    known: list[str | None] = getattr(self, "_hippocampus_partitions", None) or []
    if len(known) > len(batches):
        known = []
    out = list(known)
    for batch in batches[len(out):]:
        values = batch.column("_partition").unique()
        out.append(values[0].as_py() if len(values) == 1 else None)
    try:
        self._hippocampus_partitions = out
    except AttributeError:  # a MemTable with __slots__ (a later release): worked out again next time
        pass
    return out


def build_data_table(self: Any, rows: list[tuple[int, int]]) -> Any:
    """MemTable._build_data_table, column by column: the rows (batch_idx, row_idx) taken from the
    batches in that order, in the data schema (no `_partition`), one chunk per column as before."""
    import pyarrow as pa

    batches = tuple(self._insert_batches)
    try:
        taken = pa.Table.from_batches(batches).select(self._data_schema.names).take(_flat_indices(batches, rows))
        return pa.Table.from_arrays([c.combine_chunks() for c in taken.columns], schema=self._data_schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError):
        return ORIGINAL["_build_data_table"](self, rows)
