"""Choose the ChatModel the configuration asks for."""

from __future__ import annotations

from ..config import MemoryConfig
from .base import ChatModel
from .client import LLMClient, require_key
from .rules import RulesProvider


def make_llm(config: MemoryConfig) -> ChatModel:
    """`offline`: the deterministic rules provider (degraded); `openai`: any OpenAI-compatible endpoint."""
    if config.llm_provider == "offline":
        return RulesProvider()
    return LLMClient(
        model=config.llm_model,
        base_url=str(config.llm_base_url),
        api_key=require_key(config.llm_base_url, config.api_key("llm"), "llm"),
        timeout_s=config.llm_timeout_s,
        max_retries=config.llm_max_retries,
        retry_base_delay_s=config.llm_retry_base_delay_s,
        response_format=config.llm_response_format,
        max_tokens=config.llm_max_tokens,
    )
