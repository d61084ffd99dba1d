"""`embedding_provider: local`: any sentence-transformers model folder on disk, run on this machine.

Why: the offline default (e5-small, 4-bit) caps dense recall; a stronger model such as
EmbeddingGemma-300M (`hippocampus models fetch embeddinggemma`) raises LoCoMo recall well above it
(docs/embedder.md) at the price of torch and far more memory. torch and sentence-transformers are
an optional extra (`pip install 'hippocampus[local]'`) imported only when this embedder loads, so the
default install and `hippocampus --help` never pay for them.

The model's own prompts are applied (config_sentence_transformers.json "prompts": `query` for a
question, `document` or `passage` for a memory); a model without prompts gets none. `dim` below the
model's own truncates the vectors (Matryoshka) and normalises them again. Nothing is fetched from
a model hub: the folder must hold the whole model.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import local_model_name
from ..errors import ConfigError, EmbeddingError
from .base import Role, bounded, normalize

INSTALL_HINT = "pip install 'hippocampus[local]'"
# prompt names in config_sentence_transformers.json, by role, first found wins
PROMPT_KEYS: dict[str, tuple[str, ...]] = {"query": ("query",), "passage": ("document", "passage")}
def check_model_folder(model_path: str | Path) -> Path:
    """The folder, after checking it is a sentence-transformers model; ConfigError naming what is wrong."""
    path = Path(str(model_path)).expanduser()
    if not path.exists():
        raise ConfigError(
            f"embedding_model_path {path} does not exist; point it at a sentence-transformers model folder "
            "(e.g. `hippocampus models fetch embeddinggemma`)"
        )
    if not path.is_dir():
        raise ConfigError(f"embedding_model_path {path} is a file; it must be a sentence-transformers model folder")
    if not (path / "modules.json").is_file():
        raise ConfigError(
            f"embedding_model_path {path} is not a sentence-transformers model folder (no modules.json); "
            "save the model with SentenceTransformer.save() or download its full folder"
        )
    return path


def read_prompts(model_path: Path) -> dict[str, str]:
    """The model's query/passage prompts from config_sentence_transformers.json ({} when it has none)."""
    cfg = model_path / "config_sentence_transformers.json"
    if not cfg.is_file():
        return {}
    try:
        prompts = json.loads(cfg.read_text(encoding="utf-8")).get("prompts") or {}
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{cfg} cannot be read as JSON: {exc}") from None
    out: dict[str, str] = {}
    for role, keys in PROMPT_KEYS.items():
        found = next((prompts[k] for k in keys if isinstance(prompts.get(k), str)), None)
        if found:
            out[role] = found
    return out


class LocalEmbedder:
    """A sentence-transformers model folder on CPU; thread-safe, batches of `batch_size`.

    The model loads on first use (`dim` or `encode`); `model_name` does not need it."""

    def __init__(
        self, model_path: str | Path, dim: int | None = None, batch_size: int = 32, threads: int | None = None
    ) -> None:
        self.path = check_model_folder(model_path)
        self.prompts = read_prompts(self.path)
        self.batch_size = batch_size
        self.threads = threads
        self._truncate = dim
        self.model_name = local_model_name(self.path, dim)
        self._model: Any = None
        self._native_dim = 0
        self._lock = threading.Lock()

    @property
    def cache_key(self) -> str:
        """What its vectors depend on (embeddings/fixed.py): the model's name and every file of its folder."""
        files = sorted(p for p in self.path.rglob("*") if p.is_file())
        stamp = "".join(f"{p.relative_to(self.path)}:{p.stat().st_size}:{p.stat().st_mtime_ns};" for p in files)
        return f"{self.model_name}@{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        # torch's OpenMP threads spin between batches; where the cores are shared (a service, other processes)
        # spinning teams starve each other: EmbeddingGemma on busy cores embedded a fraction of its usual rate
        # (docs/embedder.md, "Threads: torch must not spin on shared cores"). Passive waiting has no such
        # cliff. Read once when torch loads; an explicit environment value wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                f"embedding_provider: local needs torch and sentence-transformers ({exc.name or exc} is not installed): "
                f"{INSTALL_HINT}"
            ) from None
        if self.threads:
            torch.set_num_threads(self.threads)
        bars = _quiet_progress_bars()
        try:
            # a local folder and local_files_only: never a request to a model hub
            model = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        except Exception as exc:
            raise ConfigError(f"cannot load the sentence-transformers model at {self.path}: {type(exc).__name__}: {exc}") from exc
        finally:
            bars()
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        native = int(get_dim() or 0)
        if self._truncate and native and self._truncate > native:
            raise ConfigError(f"embedding_dim {self._truncate} is larger than the model's own dimension {native} ({self.path})")
        self._native_dim, self._model = native, model
        return model

    @property
    def dim(self) -> int:
        """The configured (truncated) dimension, else the model's own (loads the model)."""
        if self._truncate:
            return self._truncate
        with self._lock:
            self._load()
        return self._native_dim

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of strings, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prompt = self.prompts.get(role)
        with self._lock:
            model = self._load()
            try:
                vecs = model.encode(
                    [bounded(t) for t in texts], prompt=prompt, batch_size=self.batch_size,
                    convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False,
                )
            except Exception as exc:
                raise EmbeddingError(f"local embedding with {self.model_name} failed: {exc}") from exc
        matrix = np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)
        if self._truncate:
            matrix = matrix[:, : self._truncate]  # Matryoshka: the leading dimensions, normalised again
        return normalize(matrix)


def _quiet_progress_bars() -> Callable[[], None]:
    """Silence transformers' "Loading weights" bar (stderr noise in every CLI command); returns the undo."""
    try:
        from transformers.utils import logging as tlog
    except ImportError:  # pragma: no cover - sentence-transformers requires transformers
        return lambda: None
    if not tlog.is_progress_bar_enabled():
        return lambda: None
    tlog.disable_progress_bar()
    return tlog.enable_progress_bar
