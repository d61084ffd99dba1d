"""An MCP tool's parameters read from its verb's request model (contract/requests.py), so that a field added to the
model is a tool parameter with its type, default and description, under the tool's own name for it
(`Face.names`), unless the verb's MCP face says why it skips it (`Face.skips`, contract/verbs.py).

The SDK reads a tool's schema from its signature: `tool_params` gives the function (written as
`async def tool(ctx: Context, **fields)`) the signature the model describes; `verb_args` maps what the tool was
called with back to the verb's own names.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field

from ..contract.verbs import Face

F = TypeVar("F", bound=Callable[..., Any])


def tool_params(model: type[BaseModel], face: Face, types: Mapping[str, Any] | None = None,
                defaults: Mapping[str, Any] | None = None) -> Callable[[F], F]:
    """Give the tool the model's fields as keyword parameters after its own (the Context): named as the face
    names them, typed as the model types them unless `types` gives the tool a narrower type (a Literal for the
    agent to choose from), each with the field's description, and its default unless `defaults` gives the tool
    its own (a shorter page for an agent)."""
    types, defaults = types or {}, defaults or {}

    def decorate(fn: F) -> F:
        hints = typing.get_type_hints(fn)  # the annotations evaluated: the SDK reads objects from a given signature
        params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in inspect.signature(fn).parameters.values()
                  if p.kind is not p.VAR_KEYWORD]
        for name, field in model.model_fields.items():
            if name in face.skips:
                continue
            default = inspect.Parameter.empty if field.is_required() else field.default
            default = default.value if isinstance(default, Enum) else default
            default = defaults.get(name, default)
            annotation = types.get(name, field.annotation)
            if name not in types:
                annotation = Annotated[(annotation, *field.metadata)] if field.metadata else annotation
            if field.description:
                annotation = Annotated[annotation, Field(description=field.description)]
            params.append(inspect.Parameter(face.names.get(name, name), inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotation))
        fn.__signature__ = inspect.Signature(params, return_annotation=hints.get("return", Any))  # type: ignore[attr-defined]
        return fn

    return decorate


def verb_args(fields: Mapping[str, Any], face: Face) -> dict[str, Any]:
    """The tool's arguments under the verb's names (the inverse of `face.names`)."""
    back = {shown: name for name, shown in face.names.items()}
    return {back.get(name, name): value for name, value in fields.items()}
