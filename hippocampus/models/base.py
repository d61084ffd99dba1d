"""`Model`, the base of the library's pydantic records: validators built on first use, not at import.

Why: pydantic builds a model's validator and serializer when its class is defined, ~1-2 ms a model. A
command line process imports some seventy models and validates a handful: `hippocampus list` spent
~0.13 s of CPU and a search through a service ~0.04 s building the rest (`python scripts/bench_cli.py`).
With `defer_build` a model is built the first time it validates, serializes or gives its JSON schema,
so nothing changes for a caller but when that cost is paid. Two kinds keep pydantic's BaseModel: models
instantiated as their module loads (the verbs list), which would be built at once anyway, and the
service's request bodies (contract/wire.py): FastAPI wraps each in `Body(alias=...)`, and a deferred one
makes its OpenAPI schema warn that the alias has no effect.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """pydantic's BaseModel with `defer_build=True` (subclasses' own model_config is merged with it)."""

    model_config = ConfigDict(defer_build=True)
