"""Retrieval: dense, BM25 and hybrid search over the store, then the context and ranking stages."""

from .context import ContextParams
from .fusion import script_of
from .ranking import RankParams
from .search import RetrievalParams, Retriever, check_search_mode

__all__ = ["Retriever", "RetrievalParams", "RankParams", "ContextParams", "check_search_mode", "script_of"]
