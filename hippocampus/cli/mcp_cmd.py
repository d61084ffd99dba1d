"""`hippocampus mcp`: the memory tools over MCP stdio, for agent hosts that launch a command.

stdout carries the protocol, so logs go to stderr, and the store is opened with fd 1 pointed at
stderr (milvus-lite's server process inherits it and must never write on the wire). The tools speak
for the operator (every user id) unless `--user` or HIPPOCAMPUS_MCP_USERS=alice,bob restricts them.
With the global `--server URL` (or HIPPOCAMPUS_SERVER) `open_memory()` gives a `hippocampus.Client`,
so the tools go through a running service, which also enforces its key (HIPPOCAMPUS_API_KEY).

A host's config, e.g. Claude Desktop's `mcpServers`:
    {"memory": {"command": "hippocampus", "args": ["--uri", "/path/memories.db", "mcp", "-u", "alice"]}}
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from .base import app, open_memory

if TYPE_CHECKING:
    from ..server.auth import Tenant

ENV_USERS = "HIPPOCAMPUS_MCP_USERS"


def stdio_tenant(users: list[str] | None, env: dict[str, str] | None = None) -> Tenant:
    """The operator, or only the users named by --user or HIPPOCAMPUS_MCP_USERS (comma-separated)."""
    from ..server.auth import Tenant

    env = os.environ if env is None else env
    named = [u.strip() for u in (users or env.get(ENV_USERS, "").split(",")) if u and u.strip()]
    if not named:
        return Tenant(name="stdio (operator)")
    return Tenant(name="stdio", users=frozenset(named))


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr for a while: whatever starts meanwhile (a milvus-lite server) keeps it."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@app.command("mcp")
def mcp_cmd(
    user: list[str] | None = typer.Option(
        None, "--user", "-u", help=f"only these user ids (repeatable; default: {ENV_USERS}, else every user)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log every refused call (on stderr)"),
) -> None:
    """Serve the memory tools over MCP stdio (for Claude Desktop, Claude Code, Cursor, ...)."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..server.mcp import run_stdio  # noqa: PLC0415 - the MCP SDK loads only for this command

    tenant = stdio_tenant(user)
    with _stdout_to_stderr():
        backend = open_memory()  # a Memory on this machine's store, or a Client with --server
    logging.getLogger("hippocampus.mcp").info("serving MCP on stdio for %s", tenant.name)
    with backend:
        run_stdio(backend, tenant)
