"""The optional second vector of a memory, `xvector` (schema version 4): a cross-language embedding
(embeddings/crosslang.py) beside e5's `vector`, read by the cross-language stage (retrieval/crosslang.py).

Why here, at the store's write door: memories are written by a dozen paths (add, consolidation,
compression, restore, undo, import...); filling the field in MilvusStore.insert/upsert from the row's
text keeps every one of them right without touching them. The field is not nullable, so a collection
that has it gets it on every write, whatever the setting; the setting (`crosslang_embedder`) decides
whether a new collection is made with it and whether search uses it.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from ..errors import SchemaMismatchError
from .schema import PROP_CROSS, XVECTOR

log = logging.getLogger(__name__)


class CrossVectors:
    """What the store knows of `xvector`: whether the collection has it, and the embedder that fills it."""

    def __init__(self, wanted: Any = None):
        self.wanted = wanted  # the configured cross-language embedder, or None (setting null)
        self.embedder: Any = None  # the one that fills the field, when the collection has it
        self.present = False

    @property
    def new_dim(self) -> int | None:
        """The field's dimension for a collection made now (None: made without it)."""
        return int(self.wanted.dim) if self.wanted is not None else None

    @property
    def new_props(self) -> dict[str, str]:
        return {PROP_CROSS: self.wanted.model_name} if self.wanted is not None else {}

    @property
    def active(self) -> bool:
        """Search may use the field: the collection has it and the setting asks for it."""
        return self.present and self.wanted is not None

    def opened(self, info: dict[str, Any] | None, collection: str) -> None:
        """After the collection was opened (`info`) or made (None): note what it holds."""
        if info is None:
            self.present, self.embedder = self.wanted is not None, self.wanted
            return
        fields = {f["name"] for f in info.get("fields", [])}
        model = (info.get("properties") or {}).get(PROP_CROSS)
        self.present = XVECTOR in fields
        if not self.present:
            if self.wanted is not None:
                log.warning("collection %r has no cross-language vectors yet; searching as before "
                            "(run `hippocampus reembed --crosslang` to add them)", collection)
            return
        if self.wanted is not None and model != self.wanted.model_name:
            raise SchemaMismatchError(f"collection {collection!r} holds cross-language vectors from {model!r}, "
                                      f"but crosslang_embedder names {self.wanted.model_name!r}")
        if self.wanted is None:
            from ..embeddings.crosslang import MODEL_NAME, NAME, make_crosslang

            if model != MODEL_NAME:
                raise SchemaMismatchError(f"collection {collection!r} holds cross-language vectors from an unknown "
                                          f"model {model!r}")
            self.embedder = make_crosslang(NAME)  # loads only when a memory is written
        else:
            self.embedder = self.wanted

    def fill(self, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        """The rows with `xvector` computed from their text (every row: an update may change the text)."""
        if not self.present or not rows:
            return rows
        vecs = self.embedder.encode([str(r.get("text") or "") for r in rows], role="passage")
        return [{**r, XVECTOR: v.tolist()} for r, v in zip(rows, vecs)]
