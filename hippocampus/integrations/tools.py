"""Memory tools for any agent framework: recall, remember and forget as JSON-schema function
definitions (OpenAI Chat Completions, OpenAI Responses and Anthropic formats) and one dispatcher
that runs a call the model made. A framework without an adapter needs about ten lines::

    from hippocampus.integrations.tools import anthropic_tools, dispatch
    reply = client.messages.create(model=..., tools=anthropic_tools(), messages=messages)
    for block in reply.content:
        if block.type == "tool_use":
            result = dispatch(memory, block.name, block.input, user_id="alice")
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": block.id, "content": result}]})

The definitions are the one implementation: the OpenAI Agents SDK tools (openai_agents.py) are
built from them. `recall` answers in the prompt block's format (a header, the rule, the memories
inside <data> delimiters that no stored text can close), each line with the id `forget` takes.
Everything goes through the `Memory` facade (or a `Client`: the same verbs); no extra is needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import HippocampusError, InvalidInput
from ..lifecycle.prompt_block import HEADER
from ..models.base import Model
from ..processors.base import DATA_RULE, data_block

__all__ = ["TOOL_NAMES", "definitions", "openai_tools", "anthropic_tools", "dispatch", "recall", "remember", "forget"]

RECALL_LIMIT = 10  # memories a recall shows at most


class _Args(Model):
    model_config = ConfigDict(extra="forbid", strict=True)


class RecallArgs(_Args):
    query: str = Field(min_length=1, max_length=2000, description="What to look for, in a few words or a question.")


class RememberArgs(_Args):
    text: str = Field(min_length=1, max_length=10_000,
                      description="One self-contained fact about the user, in their words or the third person.")


class ForgetArgs(_Args):
    memory_id: int = Field(ge=0, description="The id shown as [id N] by recall.")


_TOOLS: dict[str, tuple[type[_Args], str]] = {
    "recall": (RecallArgs, "Search the user's long-term memory (what earlier conversations told about them). "
                           "Returns the matching memories, best first, each with its id."),
    "remember": (RememberArgs, "Store one fact about the user in long-term memory, for later conversations."),
    "forget": (ForgetArgs, "Delete one memory by the id recall showed, when the user asks to forget it or it is wrong."),
}
TOOL_NAMES: tuple[str, ...] = tuple(_TOOLS)


def _schema(model: type[_Args]) -> dict[str, Any]:
    """The arguments' JSON schema, strict-mode ready (every property required, no others)."""
    schema = model.model_json_schema()
    properties = {name: {k: v for k, v in prop.items() if k != "title"} for name, prop in schema["properties"].items()}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def definitions() -> list[dict[str, Any]]:
    """[{name, description, parameters}]: the neutral form the formats below are made from."""
    return [{"name": name, "description": text, "parameters": _schema(model)} for name, (model, text) in _TOOLS.items()]


def openai_tools(api: str = "chat") -> list[dict[str, Any]]:
    """The tools for OpenAI's Chat Completions (`api="chat"`) or Responses (`api="responses"`) API."""
    if api == "chat":
        return [{"type": "function", "function": {**d, "strict": True}} for d in definitions()]
    if api == "responses":
        return [{"type": "function", **d, "strict": True} for d in definitions()]
    raise InvalidInput(f"api must be 'chat' or 'responses', got {api!r}")


def anthropic_tools() -> list[dict[str, Any]]:
    """The tools for Anthropic's Messages API (`input_schema`)."""
    return [{"name": d["name"], "description": d["description"], "input_schema": d["parameters"]} for d in definitions()]


# ---------------------------------------------------------------------- the calls
def recall(memory: Any, user_id: str, query: str, limit: int = RECALL_LIMIT) -> str:
    """The memories a search for `query` finds, best first, in the prompt block's format."""
    hits = memory.search(query, user_id=user_id, limit=limit).all[:limit]
    if not hits:
        return "No memory matches that."
    lines = "\n".join(f"- [id {h.id}] {' '.join(h.text.split())}" for h in hits)
    return f"{HEADER}\n{DATA_RULE}\n{data_block(lines)}"


def remember(memory: Any, user_id: str, text: str, chat_id: str = "default") -> str:
    """Store `text` as it is (the agent decided it is worth keeping)."""
    result = memory.add(text, user_id=user_id, chat_id=chat_id, metadata={"source": "tool"})
    ids = ", ".join(str(i) for i in result.ids)
    return f"Remembered (id {ids})." if result.ids else f"Not stored: {result.reason}"


def forget(memory: Any, user_id: str, memory_id: int) -> str:
    """Delete one memory of this user (its history stays: undo can bring it back)."""
    memory.delete(memory_id, user_id=user_id)
    return f"Forgot memory {memory_id}."


def _calls(memory: Any, user_id: str, chat_id: str, limit: int) -> dict[str, Callable[[Any], str]]:
    return {
        "recall": lambda a: recall(memory, user_id, a.query, limit),
        "remember": lambda a: remember(memory, user_id, a.text, chat_id),
        "forget": lambda a: forget(memory, user_id, a.memory_id),
    }


def parse_arguments(name: str, arguments: str | dict[str, Any] | None) -> BaseModel:
    """A tool call's arguments (JSON text or a dict) checked against its schema; InvalidInput otherwise."""
    if name not in _TOOLS:
        raise InvalidInput(f"unknown tool {name!r}: use one of {', '.join(TOOL_NAMES)}")
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{name}: the arguments are not JSON ({exc.msg})") from None
    if not isinstance(arguments, dict):
        raise InvalidInput(f"{name}: the arguments must be a JSON object")
    try:
        return _TOOLS[name][0].model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise InvalidInput(f"{name}: {where}: {first['msg']}") from None


def dispatch(memory: Any, name: str, arguments: str | dict[str, Any] | None, *, user_id: str,
             chat_id: str = "default", limit: int = RECALL_LIMIT, raise_errors: bool = False) -> str:
    """Run the tool call `name(arguments)` for `user_id` and return its text for the model.

    A bad call (unknown tool, arguments off the schema, an id that is not this user's) or a memory
    failure comes back as one line "error: ..." the model can read and correct; `raise_errors=True`
    raises it instead (InvalidInput, NotFound, StoreError, ...)."""
    try:
        args = parse_arguments(name, arguments)
        return _calls(memory, user_id, chat_id, limit)[name](args)
    except HippocampusError as exc:
        if raise_errors:
            raise
        return f"error: {exc}"
