"""Embedders for the core tests that are about the store rather than about meaning.

`HashedBagOfWords` is a real, if plain, lexical embedder (feature hashing of words and CJK
characters): fast enough to fill a store with a thousand memories, and texts sharing words are
similar. `FailingEmbedder` fails the way a broken model or endpoint does. Both implement the
same Embedder interface as the offline and OpenAI-compatible embedders.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

from hippocampus import EmbeddingError
from hippocampus.embeddings import normalize

_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W_]+", re.UNICODE)


class HashedBagOfWords:
    def __init__(self, dim: int = 384, model_name: str = "test/hashed-bag-of-words"):
        self._dim = dim
        self.model_name = model_name
        self.calls = 0

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _TOKEN.findall(text.lower()) or [text]
            for tok in tokens:
                h = hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest()
                out[row, int.from_bytes(h[:4], "little") % self._dim] += 1.0 if h[4] & 1 else -1.0
        return normalize(out)


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
