"""The cognitive processors: each one prompt file + one validated pydantic result, no store access."""

from .base import Processor, PromptTemplate, load_prompt
from .reconsolidator import EpisodicReconsolidator, apply_reconsolidation
from .results import (
    MergeResult,
    ReconsolidationResult,
    SemanticExtraction,
    SemanticFact,
    SeparationResult,
    WriteDecision,
)
from .semantic_writer import SemanticWriter
from .write_decider import EpisodicWriteDecider, episodic_metadata

# EpisodicMerger and EpisodicSeparator (processors/merger.py, separator.py) are re-exported here
# by the consolidation helper.

__all__ = [
    "Processor",
    "PromptTemplate",
    "load_prompt",
    "WriteDecision",
    "ReconsolidationResult",
    "SemanticFact",
    "SemanticExtraction",
    "MergeResult",
    "SeparationResult",
    "EpisodicWriteDecider",
    "episodic_metadata",
    "EpisodicReconsolidator",
    "apply_reconsolidation",
    "SemanticWriter",
]
