"""milvus-lite's brute-force (FLAT) index opened on the segment's own vectors, not on a copy (issue 41).

Why: milvus-lite 3.x gives each flushed segment an index per vector field. A FLAT index is the segment's
vector matrix searched with numpy: when milvus-lite builds one (at a flush or a compaction) it keeps a
reference to that matrix, but when a store opens, it reads the index back from its sidecar file
(`np.load` of the same vectors), a second copy of every vector of the field. The cross-language
companion is indexed FLAT on milvus-lite (Capabilities.companion_index): without this, a reopened
10,000-memory store held its 512-d vectors twice (+20 MB resident, and reading the file at open).

What this does: `Segment.build_or_load_index` for a FLAT or BRUTE_FORCE field builds the index from the
segment's matrix (what milvus-lite's own build does; no computation: it keeps the reference) and writes
the sidecar when it is missing, exactly as milvus-lite would; every other index type, and a segment whose
vector field holds nulls (whose matrix milvus-lite zero-fills; its sidecar is read as shipped), goes to
milvus-lite's method. Installed once per process beside store/lite_memtable.py, for local stores, on the
release line it was written against (3.x); `HIPPOCAMPUS_LITE_MEMTABLE=off` leaves milvus-lite as it ships.
tests/store/test_lite_index.py checks the searches are the same and the matrix is shared.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .lite_memtable import patchable

_LOCK = threading.Lock()
ORIGINAL: dict[str, Any] = {}  # "build_or_load_index" -> milvus-lite's own method, once installed
SHARED_TYPES = ("FLAT", "BRUTE_FORCE")


def install() -> bool:
    """Replace Segment.build_or_load_index (once per process); False where this milvus-lite is not the
    release line it was written against, or the switch is off."""
    with _LOCK:
        if ORIGINAL:
            return True
        Segment = patchable("milvus_lite.storage.segment", "Segment",
                            ("build_or_load_index", "vector_data", "index_file_path", "attach_index"))
        if Segment is None:
            return False
        ORIGINAL["build_or_load_index"] = Segment.build_or_load_index
        Segment.build_or_load_index = build_or_load_index
        return True


def build_or_load_index(self: Any, spec: Any, index_dir: str) -> None:
    """milvus-lite's Segment.build_or_load_index, with a FLAT index made on the segment's matrix."""
    field = spec.field_name
    if spec.index_type not in SHARED_TYPES or field in self.indexes or self.num_rows == 0:
        return ORIGINAL["build_or_load_index"](self, spec, index_dir)
    vectors, null_mask = self.vector_data(field)
    if null_mask is not None:
        return ORIGINAL["build_or_load_index"](self, spec, index_dir)
    from milvus_lite.index.brute_force import BruteForceIndex

    index = BruteForceIndex.build(vectors, spec.metric_type, spec.build_params)
    path = self.index_file_path(index_dir, spec.index_type, field)
    if not os.path.exists(path):  # the sidecar milvus-lite writes when it builds one (read by a process without this)
        os.makedirs(index_dir, exist_ok=True)
        index.save(path)
    self.attach_index(index, field_name=field)
    return None
