"""Graph memory: entities and triples beside the vectors (issue 16). The rows live in the store's
companion collection `<name>_graph` (store/graph.py); `build` fills it from memories in the
consolidation job, through the TripleExtractor (processors/triple_extractor.py); service.py holds the
verbs the facade delegates to (build_graph, graph)."""

from .build import GraphStats, build

__all__ = ["GraphStats", "build"]
