"""`Client` and `AsyncClient`: the verbs of `Memory`, served by a Hippocampus service over HTTP.

The same method names, arguments, return models and exception classes as `Memory`, so moving a
chat hook from in-process to a service is one line::

    memory = Memory()                     # in-process, owns the store
    memory = hippocampus.connect()        # the local service (started in the background if needed)

Each verb is written once, as a request builder in `_Requests` (remote/calls.py); `Client` sends it with httpx's sync
client and `AsyncClient` with its async one. Arguments go to the service as given, so the service's
Memory validates them exactly as in-process and a bad one comes back as the same InvalidInput.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import httpx

from ..contract import wire
from ..contract.defaults import DEFAULT_URL, ENV_SERVER
from ..contract.wire import API_PREFIX
from ..errors import HippocampusError, ServiceUnavailable, from_wire
from ..models import MemoryRecord, MemoryType
from .calls import Call, R, _json, _Requests

ENV_KEY = "HIPPOCAMPUS_API_KEY"
DEFAULT_TIMEOUT_S = 120.0  # add with infer=True waits for the LLM
PAGE = 1000
def _sync(build: Callable[..., Call[Any]]) -> Callable[..., Any]:
    @functools.wraps(build)
    def verb(self: Client, *args: Any, **kwargs: Any) -> Any:
        return self._send(build(self, *args, **kwargs))

    verb.__annotations__ = {**build.__annotations__, "return": _reply_type(build)}
    return verb


def _async(build: Callable[..., Call[Any]]) -> Callable[..., Any]:
    @functools.wraps(build)
    async def verb(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        return await self._send(build(self, *args, **kwargs))

    verb.__annotations__ = {**build.__annotations__, "return": _reply_type(build)}
    return verb


def _reply_type(build: Callable[..., Any]) -> str:
    text = str(build.__annotations__.get("return", "Any"))
    return text[len("Call[") : -1] if text.startswith("Call[") else text


class _Base:
    def __init__(self, url: str | None, api_key: str | None, timeout: float):
        self.url = (url or os.environ.get(ENV_SERVER) or DEFAULT_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get(ENV_KEY)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._headers["Content-Type"] = "application/json"
        self.timeout = timeout

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}({self.url!r})"

    def _request_args(self, call: Call[Any]) -> dict[str, Any]:
        return dict(method=call.method, url=API_PREFIX + call.path, params=call.params,
                    content=_json(call.body) if call.body is not None else None,
                    timeout=self.timeout if call.timeout == "default" else call.timeout)

    def _read(self, call: Call[R], response: httpx.Response) -> R:
        if response.status_code >= 400:
            raise _error(response)
        return call.read(response.json())

    def _unreachable(self, exc: httpx.HTTPError) -> ServiceUnavailable:
        return ServiceUnavailable(f"cannot reach the Hippocampus service at {self.url}: {type(exc).__name__}: {exc}", uri=self.url)


def _parts(items: Sequence[dict[str, Any]]) -> list[Sequence[dict[str, Any]]]:
    """An add_many batch in requests of at most wire.MAX_ADD_MANY items (one request for an empty batch)."""
    cap = wire.MAX_ADD_MANY
    return [items[i : i + cap] for i in range(0, len(items), cap)] or [items]


def _error(response: httpx.Response) -> HippocampusError:
    try:
        detail = response.json()["error"]
        return from_wire(str(detail["type"]), str(detail["message"]), response.status_code)
    except (ValueError, KeyError, TypeError):
        return from_wire("", f"HTTP {response.status_code}: {response.text[:200]}", response.status_code)


class Client(_Base):
    """A Memory served by a Hippocampus service (`hippocampus serve`); a context manager like Memory.

    ```python
    from hippocampus import Client

    with Client() as memory:  # HIPPOCAMPUS_SERVER, else http://127.0.0.1:8765 (and HIPPOCAMPUS_API_KEY)
        memory.add("I moved to Berlin in May", user_id="alice")
        print(memory.search("where does alice live?", user_id="alice").episodic[0].text)  # I moved to Berlin in May
    ```
    """

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None):
        super().__init__(url, api_key, timeout)
        self._http = httpx.Client(base_url=self.url, headers=self._headers, transport=transport)

    add = _sync(_Requests.add)
    search = _sync(_Requests.search)
    get = _sync(_Requests.get)
    page = _sync(_Requests.page)
    update = _sync(_Requests.update)
    delete = _sync(_Requests.delete)
    update_many = _sync(_Requests.update_many)
    delete_many = _sync(_Requests.delete_many)
    reset = _sync(_Requests.reset)
    history = _sync(_Requests.history)
    mark_used = _sync(_Requests.mark_used)
    observe = _sync(_Requests.observe)
    consolidate = _sync(_Requests.consolidate)
    stats = _sync(_Requests.stats)
    decay = _sync(_Requests.decay)
    context = _sync(_Requests.context)
    graph = _sync(_Requests.graph)
    curate = _sync(_Requests.curate)
    restore = _sync(_Requests.restore)
    undo = _sync(_Requests.undo)
    export_md = _sync(_Requests.export_md)
    import_md = _sync(_Requests.import_md)
    export_jsonl = _sync(_Requests.export_jsonl)
    import_jsonl = _sync(_Requests.import_jsonl)
    build_graph = _sync(_Requests.build_graph)

    def iter_all(self, user_id: str, memory_type: MemoryType | str | None = None, filters: dict[str, Any] | None = None,
                 include_expired: bool = False, *, agent_id: str | None = None, agent_scope: str = "both",
                 run_id: str | None = None) -> Iterator[MemoryRecord]:
        """Every memory of this user matching `filters` (and the agent scope), a page at a time."""
        offset: int | None = 0
        while offset is not None:
            page = self.page(user_id, memory_type, offset=offset, limit=PAGE, filters=filters, include_expired=include_expired,
                             agent_id=agent_id, agent_scope=agent_scope, run_id=run_id)
            yield from page.items
            offset = page.next_offset

    def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """Store many turns as-is (see Memory.add_many); the ids in input order. A batch over wire.MAX_ADD_MANY
        items (what one request may embed) goes as several requests, each checked whole before it is written.
        Raises InvalidInput for a bad item (the requests before it stay stored)."""
        ids: list[int] = []
        for part in _parts(items):
            ids += self._send(_Requests.add_many(self, part, batch_size))
        return ids

    def get_all(self, user_id: str, memory_type: MemoryType | str | None = None, filters: dict[str, Any] | None = None,
                include_expired: bool = False, *, agent_id: str | None = None, agent_scope: str = "both",
                run_id: str | None = None) -> list[MemoryRecord]:
        """Every memory of this user matching `filters` (and the agent scope), oldest event first."""
        return list(self.iter_all(user_id, memory_type, filters, include_expired, agent_id=agent_id, agent_scope=agent_scope,
                                  run_id=run_id))

    def healthy(self) -> bool:
        """Whether the service answers /healthz."""
        try:
            return self._http.get("/healthz", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def _send(self, call: Call[R]) -> R:
        try:
            response = self._http.request(**self._request_args(call))
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._read(call, response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """Client for asyncio agents: every verb is a coroutine."""

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(url, api_key, timeout)
        self._http = httpx.AsyncClient(base_url=self.url, headers=self._headers, transport=transport)

    add = _async(_Requests.add)
    search = _async(_Requests.search)
    get = _async(_Requests.get)
    page = _async(_Requests.page)
    update = _async(_Requests.update)
    delete = _async(_Requests.delete)
    update_many = _async(_Requests.update_many)
    delete_many = _async(_Requests.delete_many)
    reset = _async(_Requests.reset)
    history = _async(_Requests.history)
    mark_used = _async(_Requests.mark_used)
    observe = _async(_Requests.observe)
    consolidate = _async(_Requests.consolidate)
    stats = _async(_Requests.stats)
    decay = _async(_Requests.decay)
    context = _async(_Requests.context)
    graph = _async(_Requests.graph)
    curate = _async(_Requests.curate)
    restore = _async(_Requests.restore)
    undo = _async(_Requests.undo)
    export_md = _async(_Requests.export_md)
    import_md = _async(_Requests.import_md)
    export_jsonl = _async(_Requests.export_jsonl)
    import_jsonl = _async(_Requests.import_jsonl)
    build_graph = _async(_Requests.build_graph)

    async def iter_all(self, user_id: str, memory_type: MemoryType | str | None = None, filters: dict[str, Any] | None = None,
                       include_expired: bool = False, *, agent_id: str | None = None, agent_scope: str = "both",
                       run_id: str | None = None) -> AsyncIterator[MemoryRecord]:
        offset: int | None = 0
        while offset is not None:
            page = await self.page(user_id, memory_type, offset=offset, limit=PAGE, filters=filters, include_expired=include_expired,
                                   agent_id=agent_id, agent_scope=agent_scope, run_id=run_id)
            for record in page.items:
                yield record
            offset = page.next_offset

    async def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """As Client.add_many: several requests for a batch over wire.MAX_ADD_MANY items. Raises InvalidInput
        for a bad item (the requests before it stay stored)."""
        ids: list[int] = []
        for part in _parts(items):
            ids += await self._send(_Requests.add_many(self, part, batch_size))
        return ids

    async def get_all(self, user_id: str, memory_type: MemoryType | str | None = None, filters: dict[str, Any] | None = None,
                      include_expired: bool = False, *, agent_id: str | None = None, agent_scope: str = "both",
                      run_id: str | None = None) -> list[MemoryRecord]:
        return [r async for r in self.iter_all(user_id, memory_type, filters, include_expired, agent_id=agent_id,
                                               agent_scope=agent_scope, run_id=run_id)]

    async def _send(self, call: Call[R]) -> R:
        try:
            response = await self._http.request(**self._request_args(call))
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._read(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
