"""LLM access: the OpenAI-compatible client and the offline rules provider share one interface.

The client (and the `openai` package under it) is imported on first use, so an offline store opens
without it."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .base import ChatModel, Prompt
from .json_parse import extract_json

if TYPE_CHECKING:
    from .client import LLMClient, is_transient, require_key

__all__ = ["ChatModel", "Prompt", "LLMClient", "is_transient", "require_key", "extract_json"]
_LAZY = {"LLMClient": "client", "is_transient": "client", "require_key": "client", "client": None, "formats": None}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(f".{_LAZY[name] or name}", __name__)
    return module if _LAZY[name] is None else getattr(module, name)
