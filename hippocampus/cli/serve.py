"""`hippocampus serve`: the memory as one long-lived service (REST, MCP at /mcp, /metrics)."""

from __future__ import annotations

import logging

import typer

from ..contract.defaults import DEFAULT_HOST, DEFAULT_PORT, STORE_WAIT_S
from .base import _SERVER, app, store_overrides


@app.command("serve")
def serve_cmd(
    host: str = typer.Option(DEFAULT_HOST, "--host", help="address to listen on; beyond loopback only with API keys"),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="TCP port"),
    keys_file: str | None = typer.Option(None, "--keys-file", help="API keys bound to user ids (YAML/JSON; or HIPPOCAMPUS_KEYS_FILE)"),
    consolidate_cron: str | None = typer.Option(None, "--consolidate-cron", help='consolidate on a schedule, e.g. "0 3 * * *"'),
    decay_cron: str | None = typer.Option(None, "--decay-cron", help='the decay step alone on a schedule, e.g. "30 * * * *"'),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="serve MCP (streamable HTTP) at /mcp"),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning, error"),
    allowed_host: list[str] = typer.Option([], "--allowed-host", help="a host name (or name:port) clients use "
                                           "besides loopback; repeat for each (others are refused with 421)"),
    max_body_bytes: int | None = typer.Option(None, "--max-body-bytes", help="the largest request body accepted, "
                                                 "413 beyond (default 4194304, 4 MiB; batches and imports grow with their items)"),
    public_docs: bool = typer.Option(False, "--public-docs", help="serve /docs, /redoc and /openapi.json without a key"),
    debug_access_log: bool = typer.Option(False, "--debug-access-log", help="log raw paths with their query strings "
                                          "(user ids, search text): for debugging only"),
    behind_https: bool = typer.Option(False, "--behind-https", help="the service is reached through TLS (a proxy): "
                                      "the UI's session cookie is Secure and __Host- prefixed"),
    ui_session_hours: float = typer.Option(12.0, "--ui-session-hours", help="how long a Web UI login lasts "
                                           "(sessions live in the process: a restart ends them)"),
    trusted_proxy: list[str] = typer.Option([], "--trusted-proxy", help="an address (or network) of a reverse proxy "
                                            "whose X-Forwarded-For / -Proto are believed; repeat for each (default none)"),
    store_wait: float = typer.Option(STORE_WAIT_S, "--store-wait", help="seconds to wait, each wait logged, for a store "
                                     "another process holds (cron's consolidate) before giving up (default 60)"),
) -> None:
    """Serve the store over HTTP until Ctrl-C / SIGTERM (in-flight requests finish, the store is closed).

    Keys come from HIPPOCAMPUS_API_KEY (one operator key), HIPPOCAMPUS_API_KEYS ("key=alice,bob;key2=*")
    or --keys-file; without any, the service listens on loopback only and anyone there is an operator.
    Only loopback Host names and --allowed-host names are served; a state-changing request from another
    site's page is refused; the access log names route templates, never paths or query strings.
    Unless decay_preset is off, decay runs at start when its last pass is over a day old."""
    if _SERVER["url"]:
        raise typer.BadParameter("--server names a service to use; `serve` starts one (drop --server)")
    from ..server.key_reload import hold_sighup

    hold_sighup()  # a SIGHUP from now until the service reloads keys is held, not fatal (the store opens for seconds)
    from .store_path import check_store_path

    check_store_path(store_overrides(), "serve")  # a typo'd --uri is one line, never a new, empty store
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss").setLevel(logging.WARNING)  # milvus-lite's faiss lists every CPU build it did not load
    from ..server import run_server
    from ..server.app import _check_port
    from ..server.jobs import deployment_line
    from .service import configured_store, serving

    _check_port(host, port)  # a busy port is one line before anything is logged or opened (run_server checks again)
    logging.getLogger("hippocampus.server").info("%s", deployment_line(configured_store(), store_overrides().get("collection_name")))

    def run(secret: str) -> None:
        run_server(host, port, keys_file=keys_file, service_secret=secret, cron=consolidate_cron, mcp=mcp, log_level=log_level, decay_cron=decay_cron,
                   allowed_hosts=allowed_host, public_docs=public_docs, debug_access_log=debug_access_log,
                   behind_https=behind_https, ui_session_hours=ui_session_hours, trusted_proxies=trusted_proxy, store_wait_s=store_wait,
                   **({"max_body_bytes": max_body_bytes} if max_body_bytes is not None else {}), **store_overrides())

    # recorded under HIPPOCAMPUS_HOME/services while it runs: `hippocampus service status|stop` and a CLI
    # command that finds the store locked name it (see cli/service.py)
    serving(host, port, configured_store(), store_overrides().get("collection_name"), run)
