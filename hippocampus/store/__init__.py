"""Storage: the Milvus collection of memories, their history, and the filter builder."""

from . import filters
from .capabilities import Capabilities
from .milvus import MEMORY_FIELDS, MilvusStore

__all__ = ["Capabilities", "MilvusStore", "MEMORY_FIELDS", "filters"]
