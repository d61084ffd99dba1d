"""FastAPI dependencies: the caller's tenant from its key, and the service's one Memory."""

from __future__ import annotations

from fastapi import Request

from ..contract.wire import ALT_KEY_HEADER, KEY_HEADER
from ..memory import Memory
from .auth import Tenant
from .jobs import Consolidations


def presented_key(request: Request) -> str | None:
    """The key in `Authorization: Bearer <key>` or `X-API-Key: <key>`."""
    header = request.headers.get(KEY_HEADER, "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get(ALT_KEY_HEADER) or None


def authenticate(request: Request) -> Tenant:
    """Resolve the key once per request (AuthError -> 401); the tenant is kept for the metrics and MCP."""
    tenant = request.app.state.keys.resolve(presented_key(request))
    request.state.tenant = tenant
    return tenant


def memory_of(request: Request) -> Memory:
    return request.app.state.memory


def consolidations(request: Request) -> Consolidations:
    return request.app.state.consolidations
