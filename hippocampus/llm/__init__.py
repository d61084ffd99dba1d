"""LLM access: the OpenAI-compatible client and the offline rules provider share one interface."""

from .base import ChatModel, Prompt
from .client import LLMClient, is_transient, require_key
from .json_parse import extract_json

__all__ = ["ChatModel", "Prompt", "LLMClient", "is_transient", "require_key", "extract_json"]
