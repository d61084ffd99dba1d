"""`hippocampus serve`: the memory as one long-lived service (REST, MCP at /mcp, /metrics)."""

from __future__ import annotations

import logging
from typing import Optional

import typer

from ..defaults import DEFAULT_HOST, DEFAULT_PORT
from .app import _SERVER, app, store_overrides


@app.command("serve")
def serve_cmd(
    host: str = typer.Option(DEFAULT_HOST, "--host", help="address to listen on; beyond loopback only with API keys"),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="TCP port"),
    keys_file: Optional[str] = typer.Option(None, "--keys-file", help="API keys bound to user ids (YAML/JSON; or HIPPOCAMPUS_KEYS_FILE)"),
    consolidate_cron: Optional[str] = typer.Option(None, "--consolidate-cron", help='consolidate on a schedule, e.g. "0 3 * * *"'),
    decay_cron: Optional[str] = typer.Option(None, "--decay-cron", help='the decay step alone on a schedule, e.g. "30 * * * *"'),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="serve MCP (streamable HTTP) at /mcp"),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning, error"),
) -> None:
    """Serve the store over HTTP until Ctrl-C / SIGTERM (in-flight requests finish, the store is closed).

    Keys come from HIPPOCAMPUS_API_KEY (one operator key), HIPPOCAMPUS_API_KEYS ("key=alice,bob;key2=*")
    or --keys-file; without any, the service listens on loopback only and anyone there is an operator.
    Unless decay_preset is off, decay runs at start when its last pass is over a day old."""
    if _SERVER["url"]:
        raise typer.BadParameter("--server names a service to use; `serve` starts one (drop --server)")
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..server import run_server

    run_server(host, port, keys_file=keys_file, cron=consolidate_cron, mcp=mcp, log_level=log_level, decay_cron=decay_cron,
               **store_overrides())
