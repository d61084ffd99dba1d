"""The service from another process: `Client` and `AsyncClient` (each verb one sans-IO request in
calls.py, sent with httpx sync or async) and `connect()`, which finds the local service or starts one."""

from .client import AsyncClient, Client
from .launcher import connect

__all__ = ["AsyncClient", "Client", "connect"]
