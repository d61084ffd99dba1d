"""Rows this version can read (issue 42). A row whose `memory_type` it does not know (a kind a newer
version writes, or a damaged column) is left out of every read the store answers, logged once by its
id and counted with the other damaged rows (models.note_damaged, `/v1/stats` "damaged"), so no list,
search, export or store-wide job of its user fails. It stays in the store as it is: rewritten as a
kind it is not, it would be lost to the version that wrote it. Erasing its user (a delete by filter,
not by reading) still erases it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import MemoryType, note_damaged

KINDS = frozenset(t.value for t in MemoryType)


def readable(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` without those of an unknown kind (a row read without its memory_type passes)."""
    out = []
    for row in rows:
        kind = row.get("memory_type", next(iter(KINDS)))
        if kind in KINDS:
            out.append(row)
        else:
            note_damaged(row, "memory_type")
    return out
