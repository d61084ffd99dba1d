"""Storage: the Milvus collection of memories, their history, and the filter builder."""

from . import filters
from .milvus import MEMORY_FIELDS, MilvusStore

__all__ = ["MilvusStore", "MEMORY_FIELDS", "filters"]
