"""The service from another process: `Client` and `AsyncClient` (each verb one sans-IO request in
calls.py, sent with httpx sync or async) and `connect()`, which finds the local service or starts one.

`connect` is imported on first use: it reads the settings (config.py, pydantic-settings, YAML), which a
Client alone (the CLI's --server path) never needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .client import AsyncClient, Client

if TYPE_CHECKING:
    from .launcher import connect

__all__ = ["AsyncClient", "Client", "connect"]


def __getattr__(name: str) -> Any:
    if name == "connect":
        from .launcher import connect

        return connect
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
