"""The offline rules provider: a deterministic, honestly degraded stand-in for an LLM.

It implements the same `chat_json(prompt, schema)` interface as LLMClient but reads
the prompt's structured `inputs` instead of its text, and answers with heuristics
in Chinese and English. It cannot chat freely. Each processor's rules live in a
module of this package and register themselves with `@rule("<prompt name>")`; the text
heuristics they share with the processors (scripts, clauses, key terms) live in hippocampus/text.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from ...errors import LLMError
from ..base import Prompt

T = TypeVar("T", bound=BaseModel)
_RULES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def rule(name: str) -> Callable[[Callable[[dict[str, Any]], dict[str, Any]]], Callable[[dict[str, Any]], dict[str, Any]]]:
    def register(fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        _RULES[name] = fn
        return fn

    return register


class RulesProvider:
    """`llm_provider: offline`. Deterministic: the same inputs always give the same answer."""

    model = "offline-rules"

    def __init__(self) -> None:
        self.calls = 0
        _load_rule_modules()

    def chat(self, system: str, user: str) -> str:
        raise LLMError(self.model, 0, "the offline rules provider answers processor prompts only, not free chat")

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T:
        self.calls += 1
        handler = _RULES.get(prompt.name)
        if handler is None:
            raise LLMError(self.model, 1, f"no offline rules for prompt {prompt.name!r}")
        return schema.model_validate(handler(prompt.inputs))


def _load_rule_modules() -> None:
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
