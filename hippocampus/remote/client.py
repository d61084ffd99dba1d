"""`Client` and `AsyncClient`: the verbs of `Memory`, served by a Hippocampus service over HTTP.

The same method names, arguments, return models and exception classes as `Memory`, so moving a
chat hook from in-process to a service is one line::

    memory = Memory()                     # in-process, owns the store
    memory = hippocampus.connect()        # the local service (started in the background if needed)

Each verb is written once, as a request builder in `_Requests` (remote/calls.py); the methods are not
written out: every verb whose Client face is on in the one list (hippocampus/contract/verbs.py) is put
on `Client` (sent with httpx's sync client) and `AsyncClient` (its async one) as this module loads, with
the request's signature and docstring; only what is more than one request is written here (iter_all,
get_all, add_many's split) and `healthy`. Arguments go to the service as given, so the service's
Memory validates them exactly as in-process and a bad one comes back as the same InvalidInput.
"""

from __future__ import annotations

import hmac
import inspect
import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import httpx

from ..contract import store_identity, wire
from ..contract.defaults import DEFAULT_URL, ENV_SERVER
from ..contract.verbs import VERBS, Verb
from ..contract.wire import API_PREFIX
from ..errors import ConfigError, HippocampusError, ServiceUnavailable, from_wire
from ..models import MemoryRecord, MemoryType
from .calls import Call, R, _json, _Requests

ENV_KEY = "HIPPOCAMPUS_API_KEY"
# Every request has a bound (issue 57: a recorded service that accepted and never answered hung `consolidate`
# for ever). `timeout` bounds the verbs that answer from the store; `long_timeout` those that wait for an
# LLM or much embedding or a store-wide run (add with infer=True, add_many, observe, consolidate, decay,
# build_graph, the imports: remote/calls.py marks them "long"). Past it: ServiceUnavailable.
DEFAULT_TIMEOUT_S = 30.0
LONG_TIMEOUT_S = 900.0  # a consolidation of a large store; the service's LLM calls time out at 60 s each
CONNECT_TIMEOUT_S = 5.0  # a service on this machine accepts at once or refuses
PAGE = 1000


def _sync(build: Callable[..., Call[Any]]) -> Callable[..., Any]:
    """The request `build` as a Client method: built, sent, its reply read."""

    def verb(self: Client, *args: Any, **kwargs: Any) -> Any:
        return self._send(build(self, *args, **kwargs))

    return _like(verb, build)


def _async(build: Callable[..., Call[Any]]) -> Callable[..., Any]:
    """The request `build` as an AsyncClient coroutine."""

    async def verb(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        return await self._send(build(self, *args, **kwargs))

    return _like(verb, build)


def _like(verb: Callable[..., Any], build: Callable[..., Any]) -> Callable[..., Any]:
    """`verb` with the name, docstring and signature of its request, returning the reply (`Call[AddResult]` ->
    `AddResult`), so that inspect.signature, help() and the API page show Memory's arguments. No `__wrapped__`:
    the method is this module's, not an alias of the request (which the API page would then show)."""
    verb.__doc__ = build.__doc__
    reply = _reply_type(build)
    verb.__annotations__ = {**build.__annotations__, "return": reply}
    verb.__signature__ = inspect.signature(build).replace(return_annotation=reply)  # type: ignore[attr-defined]
    verb.__module__ = __name__  # a method of this module's classes, not an import from calls.py
    return verb


def _reply_type(build: Callable[..., Any]) -> str:
    text = str(build.__annotations__.get("return", "Any"))
    return text[len("Call[") : -1] if text.startswith("Call[") else text


def _install(cls: type, wrap: Callable[[Callable[..., Call[Any]]], Callable[..., Any]],
             verbs: Sequence[Verb] = VERBS, requests: type = _Requests) -> tuple[str, ...]:
    """Give `cls` every verb whose Client face is on (contract/verbs.py): the method written in the class
    body (iter_all, add_many, get_all), else its request in `_Requests`, sent by `wrap`. A declared verb
    with neither, or a request no verb declares, is a TypeError as the module loads, naming the gap."""
    faced = {v.client.name: v.name for v in verbs if v.client.name}
    unused = sorted(n for n in vars(requests) if not n.startswith("_") and n not in faced.values())
    if unused:
        raise TypeError(f"{requests.__name__} in remote/calls.py has requests no verb's Client face declares: {unused} "
                        "(declare them in hippocampus/contract/verbs.py)")
    for name, verb in faced.items():
        if name in vars(cls):
            continue  # written by hand in the class body
        build = vars(requests).get(verb)
        if build is None:
            raise TypeError(f"the verb {verb!r} declares a Client face {name!r} (hippocampus/contract/verbs.py) but "
                            f"{requests.__name__} in remote/calls.py has no {verb!r}: write its request there, write "
                            f"{cls.__name__}.{name} by hand, or mark the face off(...) with the reason")
        method = wrap(build)
        method.__name__, method.__qualname__ = name, f"{cls.__name__}.{name}"
        setattr(cls, name, method)
    return tuple(faced)


class _Base:
    def __init__(self, url: str | None, api_key: str | None, timeout: float, long_timeout: float):
        self.url = (url or os.environ.get(ENV_SERVER) or DEFAULT_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get(ENV_KEY)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._headers["Content-Type"] = "application/json"
        self.timeout, self.long_timeout = _seconds("timeout", timeout), _seconds("long_timeout", long_timeout)

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}({self.url!r})"

    def _seconds_for(self, call: Call[Any]) -> float:
        if call.timeout == "default":
            return self.timeout
        if call.timeout == "long":
            return self.long_timeout
        return _seconds("a request's timeout", call.timeout)

    def _request_args(self, call: Call[Any]) -> dict[str, Any]:
        seconds = self._seconds_for(call)
        return dict(method=call.method, url=API_PREFIX + call.path, params=call.params,
                    content=_json(call.body) if call.body is not None else None,
                    timeout=httpx.Timeout(seconds, connect=min(CONNECT_TIMEOUT_S, seconds)))

    def _read(self, call: Call[R], response: httpx.Response) -> R:
        if response.status_code >= 400:
            raise _error(response)
        return call.read(response.json())

    def _unreachable(self, exc: httpx.HTTPError, call: Call[Any]) -> ServiceUnavailable:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            setting = "long_timeout" if call.timeout == "long" else "timeout"
            return ServiceUnavailable(
                f"the Hippocampus service at {self.url} did not answer {call.method} {API_PREFIX}{call.path} within "
                f"{self._seconds_for(call):g} s (the request may still complete there); a service that accepts and "
                f"never answers is stuck: `hippocampus service status`; for longer work, Client({setting}=...)", uri=self.url)
        return ServiceUnavailable(f"cannot reach the Hippocampus service at {self.url}: {type(exc).__name__}: {exc}", uri=self.url)


def _seconds(name: str, value: Any) -> float:
    """A timeout in seconds: a positive number (None, for no bound, is refused: every call ends)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)


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


def _verify(url: str) -> bool:
    """httpx's `verify` for a client of `url`: False (no TLS context made) for plain http, where every request
    goes to that http base URL and redirects are not followed, so no certificate is ever checked; making the
    default context reads the CA bundle, a noticeable share of a CLI command through a service. True for https."""
    return not url.lower().startswith("http://")


class Client(_Base):
    """A Memory served by a Hippocampus service (`hippocampus serve`); a context manager like Memory.

    ```python
    from hippocampus import Client

    with Client() as memory:  # HIPPOCAMPUS_SERVER, else http://127.0.0.1:8765 (and HIPPOCAMPUS_API_KEY)
        memory.add("I moved to Berlin in May", user_id="alice")
        print(memory.search("where does alice live?", user_id="alice").episodic[0].text)  # I moved to Berlin in May
    ```

    Each request ends: `timeout` (30 s) bounds the verbs that answer from the store, `long_timeout` (900 s)
    those that wait for an LLM or a store-wide run (consolidate, decay, build_graph, add with infer=True,
    add_many, observe, the imports); no answer within it raises ServiceUnavailable.
    """

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 long_timeout: float = LONG_TIMEOUT_S, transport: httpx.BaseTransport | None = None):
        super().__init__(url, api_key, timeout, long_timeout)
        self._http = httpx.Client(base_url=self.url, headers=self._headers, transport=transport, verify=_verify(self.url))


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

    def holds_store(self, milvus_uri: str) -> bool | None:
        """Whether the service holds the store at `milvus_uri`, asked at /healthz with a fresh nonce
        (contract/store_identity.py: the path never crosses the wire); None when it does not say."""
        nonce = secrets.token_urlsafe(24)
        try:
            answer = self._http.get("/healthz", headers={store_identity.STORE_HEADER: nonce}, timeout=2.0)
        except httpx.HTTPError:
            return None
        held = answer.headers.get(store_identity.STORE_HEADER)
        if answer.status_code != 200 or not held:
            return None
        return hmac.compare_digest(held, store_identity.fingerprint(milvus_uri, nonce))

    def _send(self, call: Call[R]) -> R:
        try:
            response = self._http.request(**self._request_args(call))
        except httpx.HTTPError as exc:
            raise self._unreachable(exc, call) from exc
        return self._read(call, response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """Client for asyncio agents: every verb is a coroutine (the same timeouts as Client's)."""

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 long_timeout: float = LONG_TIMEOUT_S, transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(url, api_key, timeout, long_timeout)
        self._http = httpx.AsyncClient(base_url=self.url, headers=self._headers, transport=transport, verify=_verify(self.url))


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
            raise self._unreachable(exc, call) from exc
        return self._read(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


VERB_NAMES: tuple[str, ...] = _install(Client, _sync)
_install(AsyncClient, _async)
