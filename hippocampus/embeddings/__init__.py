"""Embedders: the offline default, any OpenAI-compatible endpoint, and a local sentence-transformers folder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Embedder, Role, cosine_similarity, normalize
from .offline import OfflineEmbedder

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from .local import LocalEmbedder
    from .openai_compat import OpenAIEmbedder

__all__ = ["Embedder", "Role", "OfflineEmbedder", "OpenAIEmbedder", "LocalEmbedder", "cosine_similarity", "normalize", "make_embedder"]


def __getattr__(name: str) -> Any:
    """OpenAIEmbedder / LocalEmbedder on first use: `openai` loads only for an endpoint (torch only when a local model loads)."""
    if name == "OpenAIEmbedder":
        from .openai_compat import OpenAIEmbedder

        return OpenAIEmbedder
    if name == "LocalEmbedder":
        from .local import LocalEmbedder

        return LocalEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(config: MemoryConfig) -> Embedder:
    """The embedder the settings name; each provider's dependencies load only when it is chosen."""
    if config.embedding_provider == "offline":
        return OfflineEmbedder(batch_size=config.embedding_batch_size)
    if config.embedding_provider == "local":
        from .local import LocalEmbedder

        assert config.embedding_model_path is not None  # MemoryConfig refuses local without it
        return LocalEmbedder(
            config.embedding_model_path, dim=config.embedding_dim, batch_size=config.embedding_batch_size,
            threads=config.embedding_threads,
        )
    from ..llm.client import require_key
    from .openai_compat import OpenAIEmbedder

    return OpenAIEmbedder(
        model=config.embedding_model,
        dim=int(config.embedding_dim or 0),
        base_url=str(config.embedding_base_url),
        api_key=require_key(config.embedding_base_url, config.api_key("embedding"), "embedding"),
        batch_size=config.embedding_batch_size,
        timeout_s=config.llm_timeout_s,
        max_retries=config.llm_max_retries,
        retry_base_delay_s=config.llm_retry_base_delay_s,
    )
