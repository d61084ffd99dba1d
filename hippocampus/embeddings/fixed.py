"""Vectors of fixed texts (the hubness stage's probe questions), embedded once per machine (issue 41).

Why: the hubness stage (retrieval/hubness.py) needs its twenty probe questions embedded before the
first dense search ranks anything; a service does it once, but a `hippocampus search` process did it
every time, a large share of a short command (docs/performance.md, "Command line"). The vectors
depend only on the model and the texts, so they are kept as one .npy under the models directory,
named by a digest of the embedder's `cache_key` (a string that changes whenever its vectors could:
the bundled model's package version, a local model's files), the role and the texts. An embedder
without a `cache_key` (a remote one: its model may change behind its name) is asked every time. A
file that cannot be read, or holds the wrong shape, is embedded again and rewritten.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..config import models_dir
from .base import Embedder, Role

log = logging.getLogger(__name__)


def cache_file(embedder: Embedder, texts: Sequence[str], role: Role) -> Path | None:
    """Where these texts' vectors by this embedder are kept, or None when they may not be kept."""
    key = getattr(embedder, "cache_key", None)
    if not isinstance(key, str) or not key:
        return None
    digest = hashlib.sha256("\x1f".join([key, str(embedder.dim), role, *texts]).encode()).hexdigest()[:24]
    return models_dir() / "vectors" / f"{digest}.npy"


def fixed_vectors(embedder: Embedder, texts: Sequence[str], role: Role = "query") -> np.ndarray:
    """`embedder.encode(texts, role)` as float32, read from the cache where the embedder allows one."""
    path = cache_file(embedder, texts, role)
    if path is not None:
        try:
            found = np.load(path, allow_pickle=False)
            if found.shape == (len(texts), embedder.dim) and found.dtype == np.float32:
                return found
        except (OSError, ValueError):
            pass
    vecs = np.asarray(embedder.encode(list(texts), role=role), dtype=np.float32)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.{os.getpid()}.npy")
            np.save(tmp, vecs)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only home: embedded again next time
            log.debug("could not keep fixed vectors in %s: %s", path, exc)
    return vecs
