"""The Embedder interface every embedding backend implements."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from .turns import FairLock

__all__ = ["LOCK_CHUNK", "Embedder", "FairLock", "Role", "bounded", "chunks", "cosine_similarity", "encode_in_turns",
           "normalize", "normalize_rows"]

Role = Literal["query", "passage"]
# A long text is embedded by its head and tail (the whole text is still stored and BM25-indexed):
# e5 reads 512 tokens, and the bundled engine's time grows with the length of what it is handed.
EMBED_HEAD_CHARS = 1500
EMBED_TAIL_CHARS = 500
# An embedder's lock (and the writer's) is taken per chunk of at most this many texts, not per call (issues
# 41, 57): another tenant's search waits for the chunk in progress, so the chunk is kept small; the texts'
# CPU cost does not grow with fewer per call (docs/service.md, "Fairness between tenants", measures it).
# The lock is granted in turns between tenants (turns.py); while another tenant is about, a chunk is
# FairLock.SHARED_CHUNK texts instead (turns.py, docs/decisions.md "Adaptive chunks").
LOCK_CHUNK = 8
# ... and of at most this many characters as embedded (one longer text makes a chunk of its own), so a chunk
# of long texts costs about one long text.
LOCK_CHUNK_CHARS = EMBED_HEAD_CHARS + EMBED_TAIL_CHARS


def chunks(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    """`texts` in consecutive chunks of at most min(size, LOCK_CHUNK) texts and, past a chunk's first text,
    LOCK_CHUNK_CHARS characters as embedded: a chunk of long texts costs about one long text, not 16."""
    out: list[Sequence[str]] = []
    start = 0
    while start < len(texts):
        end = chunk_end(texts, start, size)
        out.append(texts[start:end])
        start = end
    return out


def chunk_end(texts: Sequence[str], start: int, size: int) -> int:
    """Where the chunk that begins at `start` ends: after at most min(size, LOCK_CHUNK) texts and, past its
    first text, LOCK_CHUNK_CHARS characters as embedded; always after one text at least."""
    step = max(1, min(int(size), LOCK_CHUNK))
    end, chars = start, 0
    while end < len(texts):
        n = min(len(texts[end]), EMBED_HEAD_CHARS + EMBED_TAIL_CHARS)
        if end > start and (end - start >= step or chars + n > LOCK_CHUNK_CHARS):
            break
        chars += n
        end += 1
    return end


def encode_in_turns(texts: Sequence[str], size: int, lock: FairLock,
                    run: Callable[[Sequence[str]], np.ndarray], dim: int) -> np.ndarray:
    """`run(chunk)` for consecutive chunks of `texts`, each under `lock`, in order, written into the rows of one
    (len(texts), dim) float32 array (a list of chunks and their concatenation would hold a large batch twice).
    Each chunk is sized once the lock is granted: min(size, LOCK_CHUNK) texts (`chunk_end`), or
    FairLock.SHARED_CHUNK while another tenant waits or has just used the lock (`FairLock.chunk_size`), so its
    next request waits for a small chunk, while a tenant alone keeps full ones."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    start = 0
    while start < len(texts):
        with lock:
            end = chunk_end(texts, start, lock.chunk_size(min(int(size), LOCK_CHUNK)))
            out[start:end] = run(texts[start:end])
        start = end
    return out


def bounded(text: str) -> str:
    """`text` itself, or its first EMBED_HEAD_CHARS and last EMBED_TAIL_CHARS characters."""
    if len(text) <= EMBED_HEAD_CHARS + EMBED_TAIL_CHARS:
        return text
    return f"{text[:EMBED_HEAD_CHARS]} … {text[-EMBED_TAIL_CHARS:]}"


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length vectors.

    `role` matters for asymmetric models such as e5 ("query: " vs "passage: ");
    symmetric models ignore it.
    """

    model_name: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray: ...


def normalize(matrix: np.ndarray) -> np.ndarray:
    """Row-normalise so that a dot product is the cosine similarity; zero rows stay zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """`normalize` in place, for a float32 matrix the caller owns, a block of rows at a time (norm squares its
    input: a whole-matrix norm would be a second copy of a large batch); returns it."""
    for start in range(0, len(matrix), 1024):
        block = matrix[start:start + 1024]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        keep = norms > 0
        np.divide(block, norms, out=block, where=keep)
        block[~keep[:, 0]] = 0.0
    return matrix


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two vectors; 0.0 when either is the zero vector (never NaN)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"vectors differ in dimension: {x.shape} vs {y.shape}")
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx == 0 or ny == 0:
        return 0.0
    return float(np.clip(np.dot(x, y) / (nx * ny), -1.0, 1.0))
