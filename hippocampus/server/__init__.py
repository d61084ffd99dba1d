"""The service face of Hippocampus: REST (FastAPI), MCP and metrics over one Memory.

Nothing here implements memory: every route calls the facade (`hippocampus.Memory`)."""

from .app import DEFAULT_HOST, DEFAULT_PORT, create_app, run_server
from .auth import KeyRing, Tenant

__all__ = ["create_app", "run_server", "KeyRing", "Tenant", "DEFAULT_HOST", "DEFAULT_PORT"]
