"""`FailingEmbedder`: fails the way a broken model or endpoint does, for the core tests that are
about the store rather than about meaning (their working embedder is hippocampus.testing's
DeterministicEmbedder). It implements the same Embedder interface as the real embedders.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hippocampus import EmbeddingError


class FailingEmbedder:
    """Looks like `like` (same name and dimension, so a store made with it opens) but every encode fails."""

    def __init__(self, like: object, message: str = "model unavailable"):
        self.model_name = like.model_name  # type: ignore[attr-defined]
        self._dim = like.dim  # type: ignore[attr-defined]
        self.message = message
        self.calls = 0

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        self.calls += 1
        raise EmbeddingError(f"{self.model_name}: {self.message}")
