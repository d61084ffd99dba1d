"""Hippocampus: long-term memory for LLM agents over one Milvus collection."""

from .config import MemoryConfig
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
from .client import AsyncClient, Client
from .launcher import connect
from .memory import Memory
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
    SearchHit,
    SearchResult,
    State,
)

__version__ = "0.1.0"
__all__ = [
    "Memory",
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
