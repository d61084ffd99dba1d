"""Embedders: the offline default and any OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Embedder, Role, cosine_similarity, normalize
from .offline import OfflineEmbedder

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from .openai_compat import OpenAIEmbedder

__all__ = ["Embedder", "Role", "OfflineEmbedder", "OpenAIEmbedder", "cosine_similarity", "normalize", "make_embedder"]


def __getattr__(name: str) -> Any:
    """OpenAIEmbedder on first use: the `openai` package loads only for an endpoint."""
    if name == "OpenAIEmbedder":
        from .openai_compat import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(config: "MemoryConfig") -> Embedder:
    if config.embedding_provider == "offline":
        return OfflineEmbedder(batch_size=config.embedding_batch_size)
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
