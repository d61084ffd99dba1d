"""The interface shared by the HTTP LLM client, the offline rules provider and test scripts."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from ..models.base import Model

T = TypeVar("T", bound=BaseModel)


class Prompt(Model):
    """A rendered prompt: what an LLM reads (`system`, `user`) and the structured
    `inputs` it was rendered from, which the offline rules provider reads instead."""

    name: str
    system: str
    user: str
    inputs: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class ChatModel(Protocol):
    model: str

    def chat(self, system: str, user: str) -> str: ...

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T: ...
