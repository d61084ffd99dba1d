"""`Model`, the base of the library's pydantic records: validators built on first use, not at import.

Why: pydantic builds a model's validator and serializer when its class is defined, and a command line
process imports dozens of models to validate a handful. With `defer_build` a model is built the first
time it validates, serializes or gives its JSON schema, so nothing changes for a caller but when that
cost is paid: importing the command line and the Client builds about half as many models (docs/
performance.md, "Command line"). Two kinds keep pydantic's BaseModel:
models instantiated as their module loads (the verbs list), which would be built at once anyway, and
the service's request bodies (contract/wire.py), because FastAPI wraps each in a TypeAdapter of
`Annotated[Body, Body(alias=...)]` that inherits the deferral, and building that one later, for the
OpenAPI schema, warns that the alias has no effect.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """pydantic's BaseModel with `defer_build=True` (subclasses' own model_config is merged with it)."""

    model_config = ConfigDict(defer_build=True)
