"""The facade: `Memory` (facade.py), every public verb a one-line delegate to its service; the
services of this folder (records, observe, browse, batch, undo) and the online flow's helpers (online.py);
`AsyncMemory` (async_memory.py), the same verbs as coroutines, generated from hippocampus/contract/verbs.py
(`python scripts/verbs.py --write`) over async_base.py."""

from .async_memory import AsyncMemory  # noqa: E402 (after Memory, which it wraps)
from .facade import Memory, load_config

__all__ = ["Memory", "AsyncMemory", "load_config"]
