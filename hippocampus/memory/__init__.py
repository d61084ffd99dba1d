"""The facade: `Memory` (facade.py), every public verb a one-line delegate to its service; the
services of this folder (records, observe, browse, undo) and the online flow's helpers (online.py)."""

from .facade import Memory, load_config

__all__ = ["Memory", "load_config"]
