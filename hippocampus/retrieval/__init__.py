"""Retrieval: dense, BM25 and hybrid search over the store, then ranking."""

from .search import Retriever

__all__ = ["Retriever"]
