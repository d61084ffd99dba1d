"""Regular expressions compiled on first use (issue 41).

Why: the text and lifecycle modules hold about fifty large patterns (the offline rules' vocabulary in two
languages), and compiling them as the modules load was paid by every process that imports the store,
a `hippocampus list` among them, which never matches one (docs/performance.md, "Command line"). A
`LazyPattern` compiles on its first method or attribute use and then answers as the compiled pattern does;
nothing else changes.
"""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """`re.compile(pattern, flags)`, made when first used: `.search`, `.sub`, `.pattern`... as a Pattern."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    @property
    def is_compiled(self) -> bool:
        """Whether a use has compiled it yet (reading this compiles nothing)."""
        return self._compiled is not None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)  # two threads may both compile: the same pattern either way
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._args[0]!r}, {self._args[1]!r})"


def lazy_compile(pattern: str, flags: int = 0) -> Any:
    """A pattern compiled on first use (typed Any: it answers every re.Pattern method)."""
    return LazyPattern(pattern, flags)
