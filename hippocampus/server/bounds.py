"""Per-route body caps and a gate on large bodies in flight (issue 42, item 3): parsed JSON takes many
times its body's size in memory (a long `in` list most of all), so the body cap alone does not bound
memory (docs/security.md).

- ONE_REQUEST_BYTES (1 MiB) on every route but the bulk ones: the largest valid single-memory request
  (guard._WORST_ONE_MEMORY, about 0.57 MiB) fits, a search or add of 4 MiB does not;
- the bulk routes (BULK_PATHS: add_many, update_many, the imports, MCP) keep `serve --max-body-bytes`
  (4 MiB by default);
- at most LARGE_IN_FLIGHT requests whose body is over ONE_REQUEST_BYTES (or of unknown length, on a
  bulk route) are in the app at once; the others wait before their body is read (it stays in the
  socket, uvicorn pausing the read), so the parsed copies of large bodies never add up past that.
"""

from __future__ import annotations

import asyncio

from starlette.datastructures import Headers

ONE_REQUEST_BYTES = 1024 * 1024
BULK_PATHS = frozenset({"/v1/memories/batch", "/v1/memories/batch/update", "/v1/import/md", "/v1/import/jsonl", "/mcp"})
LARGE_IN_FLIGHT = 2


def route_cap(path: str, max_body_bytes: int) -> int:
    """The body cap of this path: the service's own on a bulk route, else at most ONE_REQUEST_BYTES."""
    return max_body_bytes if path in BULK_PATHS else min(max_body_bytes, ONE_REQUEST_BYTES)


def is_large(path: str, headers: Headers, max_body_bytes: int) -> bool:
    """Whether this request's body may be over ONE_REQUEST_BYTES (a bulk route's announced or unknown length)."""
    if route_cap(path, max_body_bytes) <= ONE_REQUEST_BYTES:
        return False
    length = (headers.get("content-length") or "").strip()
    if headers.get("transfer-encoding") is not None and not length:
        return True
    return length.isdigit() and int(length) > ONE_REQUEST_BYTES


class LargeGate:
    """At most `limit` large requests in the app at once (made on first use, inside the server's loop)."""

    def __init__(self, limit: int = LARGE_IN_FLIGHT):
        self.limit = limit
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def semaphore(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.limit)
        return self._semaphore

    @property
    def in_flight(self) -> int:
        return 0 if self._semaphore is None else self.limit - self._semaphore._value  # noqa: SLF001
