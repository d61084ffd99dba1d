"""The cognitive processors: each one prompt file + one validated pydantic result, no store access."""

from .base import Processor, PromptTemplate, load_prompt
from .merger import EpisodicMerger
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
from .separator import EpisodicSeparator
from .write_decider import EpisodicWriteDecider, episodic_metadata

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
    "EpisodicMerger",
    "EpisodicSeparator",
]
