"""Hippocampus: long-term memory for LLM agents over one Milvus collection."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__  # a leaf module: nothing inside the package imports the root for it
from .errors import (
    AuthError,
    ConfigError,
    EmbeddingError,
    HippocampusError,
    InvalidInput,
    LLMError,
    NotFound,
    SchemaMismatchError,
    ServiceUnavailable,
    StoreCorruptedError,
    StoreError,
    StoreLockedError,
)

# Imported on first use (PEP 562), so that `import hippocampus` and the command line start fast:
# Memory pulls in the store client and the embedder, Client httpx, MemoryConfig pydantic-settings.
_LAZY = {
    "Memory": "memory", "AsyncMemory": "memory", "Client": "remote", "AsyncClient": "remote", "connect": "remote", "MemoryConfig": "config",
    **dict.fromkeys(("AddResult", "Category", "ConsolidationStats", "DecayStats", "HistoryAction", "HistoryEvent", "Lifecycle", "MemoryPage", "MemoryRecord", "MemoryType", "ObserveResult", "SearchHit", "SearchResult", "State", "UndoResult"), "models"),
}

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .memory import AsyncMemory, Memory
    from .models import (
        AddResult,
        Category,
        ConsolidationStats,
        DecayStats,
        HistoryAction,
        HistoryEvent,
        Lifecycle,
        MemoryPage,
        MemoryRecord,
        MemoryType,
        ObserveResult,
        SearchHit,
        SearchResult,
        State,
        UndoResult,
    )
    from .remote import AsyncClient, Client, connect


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hippocampus' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Memory",
    "AsyncMemory",
    "Client",
    "AsyncClient",
    "connect",
    "MemoryConfig",
    "MemoryRecord",
    "MemoryPage",
    "MemoryType",
    "SearchHit",
    "SearchResult",
    "HistoryEvent",
    "HistoryAction",
    "AddResult",
    "ObserveResult",
    "UndoResult",
    "ConsolidationStats",
    "DecayStats",
    "Lifecycle",
    "Category",
    "State",
    "HippocampusError",
    "ConfigError",
    "AuthError",
    "InvalidInput",
    "NotFound",
    "StoreError",
    "StoreLockedError",
    "ServiceUnavailable",
    "SchemaMismatchError",
    "StoreCorruptedError",
    "EmbeddingError",
    "LLMError",
]
