"""FastAPI dependencies, each a typed alias a route names as a parameter (`tenant: TenantDep`, `memory: MemoryDep`,
`jobs: JobsDep`): the caller's tenant from its key, the service's one Memory, its background jobs; and what
every /v1 router shares: its prefix and its documented errors (`v1_router`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from ..contract.wire import ALT_KEY_HEADER, API_PREFIX, KEY_HEADER, ErrorBody
from ..memory import Memory
from .auth import Tenant
from .jobs import Consolidations

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in (
        (401, "API key missing or unknown"),
        (404, "no such memory for this user (also: a user id the key may not touch)"),
        (422, "invalid input; nothing was changed"),
        (502, "the LLM failed"),
        (503, "the store or the embedder is unavailable"),
    )
}


def v1_router() -> APIRouter:
    """A router of /v1 routes, the prefix in each route's own path: the app includes every such router
    itself, never one inside another, because a route's `path` (the metrics' and the access log's
    label) holds only the prefixes of its own router, and a nested one's lacked /v1 (issue 45)."""
    return APIRouter(prefix=API_PREFIX, responses=ERRORS)


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


TenantDep = Annotated[Tenant, Depends(authenticate)]
"""A route's `tenant: TenantDep` parameter: the caller's tenant, its key resolved once per request."""


def memory_of(request: Request) -> Memory:
    """The service's one Memory (every tenant's: the routes check the tenant before they call it)."""
    return request.app.state.memory


def consolidations(request: Request) -> Consolidations:
    """The service's background jobs: consolidation, decay and graph runs, one at a time."""
    return request.app.state.consolidations


MemoryDep = Annotated[Memory, Depends(memory_of)]
"""A route's `memory: MemoryDep` parameter: the service's Memory."""

JobsDep = Annotated[Consolidations, Depends(consolidations)]
"""A route's `jobs: JobsDep` parameter: the service's background jobs (server/jobs.py)."""
