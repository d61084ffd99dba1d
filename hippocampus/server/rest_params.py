"""A GET route's query parameters read from its verb's request model (contract/requests.py), as MCP's tool
parameters are (server/mcp_params.py): each field the REST face does not skip (`Face.skips`, contract/verbs.py, each
with why) is a query parameter with the field's type, default and description, so a field added to the model is a
parameter of the route with no line here. FastAPI reads a dependency's parameters from its signature:
`query_params` makes the dependency, which hands the route the fields given, by the verb's names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel

from ..contract.verbs import Face


def query_params(model: type[BaseModel], face: Face, types: Mapping[str, Any] | None = None) -> Callable[..., dict[str, Any]]:
    """A dependency whose parameters are the model's fields (less the face's skips), as query parameters; `types`
    gives a field the query string's own type (`filters`: JSON text, which the route reads)."""
    types = types or {}
    back = {shown: name for name, shown in face.names.items()}

    def fields(**given: Any) -> dict[str, Any]:
        return {back.get(name, name): value for name, value in given.items()}

    params = []
    for name, field in model.model_fields.items():
        if name in face.skips:
            continue
        default = inspect.Parameter.empty if field.is_required() else field.default
        default = default.value if isinstance(default, Enum) else default
        annotation = Annotated[(types[name], Query(description=field.description))] if name in types else \
            Annotated[(field.annotation, *field.metadata, Query(description=field.description))]
        params.append(inspect.Parameter(face.names.get(name, name), inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation))
    fields.__signature__ = inspect.Signature(params, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    return fields
