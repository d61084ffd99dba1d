"""What `Client` and `AsyncClient` (client.py, generated from the verb list) stand on: the service's URL, the
API key and the two timeouts, each request sent with httpx (sync or async) and its reply read or turned into
the library's error, and the verbs that are more than one request (iter_all, get_all, add_many's split).
The one-request verbs are written out in client.py by `python scripts/verbs.py --write`."""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import httpx

from ..contract import store_identity, wire
from ..contract.defaults import DEFAULT_URL, ENV_SERVER
from ..contract.wire import API_PREFIX
from ..errors import ConfigError, HippocampusError, ServiceUnavailable, from_wire
from ..models import MemoryRecord
from .calls import REQUESTS, Call, R, _json

ENV_KEY = "HIPPOCAMPUS_API_KEY"
# Every request has a bound (issue 57: a recorded service that accepted and never answered hung `consolidate`
# for ever). `timeout` bounds the verbs that answer from the store; `long_timeout` those that wait for an
# LLM or much embedding or a store-wide run (add with infer=True, add_many, observe, consolidate, decay,
# build_graph, the imports: remote/calls.py marks them "long"). Past it: ServiceUnavailable.
DEFAULT_TIMEOUT_S = 30.0
LONG_TIMEOUT_S = 900.0  # a consolidation of a large store; the service's LLM calls time out at 60 s each
CONNECT_TIMEOUT_S = 5.0  # a service on this machine accepts at once or refuses
HEALTH_READ_S = 10.0  # a health check's wait for the answer: a service busy on two cores took over 2 s (issue 57)
PAGE = 1000


class _Base:
    def __init__(self, url: str | None, api_key: str | None, timeout: float, long_timeout: float):
        self.url = (url or os.environ.get(ENV_SERVER) or DEFAULT_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get(ENV_KEY)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._headers["Content-Type"] = "application/json"
        self.timeout, self.long_timeout = _seconds("timeout", timeout), _seconds("long_timeout", long_timeout)
        # a health check: refused at once when nothing listens (connect 2 s), but a busy service is given time to
        # answer (up to HEALTH_READ_S, or the client's own timeout): a slow answer is not "no service here"
        self._health_timeout = httpx.Timeout(min(self.timeout, HEALTH_READ_S), connect=min(self.timeout, 2.0))

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


def _holds(answer: httpx.Response, milvus_uri: str, nonce: str) -> bool | None:
    """What a /healthz answer to `nonce` says: whether its service holds `milvus_uri`; None when it does not say."""
    held = answer.headers.get(store_identity.STORE_HEADER)
    if answer.status_code != 200 or not held:
        return None
    return hmac.compare_digest(held, store_identity.fingerprint(milvus_uri, nonce))


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


class SyncTransport(_Base):
    """Client's connection (httpx's sync client) and the verbs that are more than one request."""

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 long_timeout: float = LONG_TIMEOUT_S, transport: httpx.BaseTransport | None = None):
        super().__init__(url, api_key, timeout, long_timeout)
        self._http = httpx.Client(base_url=self.url, headers=self._headers, transport=transport, verify=_verify(self.url))

    def _pages(self, **fields: Any) -> Iterator[MemoryRecord]:
        """Every memory `page` lists with these fields (PageRequest's, less offset and limit), a page per request:
        the Client's iter_all and get_all (generated, contract/faces.py)."""
        offset: int | None = 0
        while offset is not None:
            page = self._send(REQUESTS.page(**fields, offset=offset, limit=PAGE))
            yield from page.items
            offset = page.next_offset

    def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """Store many turns as-is (see Memory.add_many); the ids in input order. A batch over wire.MAX_ADD_MANY
        items (what one request may embed) goes as several requests, each checked whole before it is written.
        Raises InvalidInput for a bad item (the requests before it stay stored)."""
        ids: list[int] = []
        for part in _parts(items):
            sent: list[int] = self._send(REQUESTS.add_many(part, batch_size))
            ids += sent
        return ids

    def healthy(self) -> bool:
        """Whether the service answers /healthz."""
        try:
            return self._http.get("/healthz", timeout=self._health_timeout).status_code == 200
        except httpx.HTTPError:
            return False

    def holds_store(self, milvus_uri: str) -> bool | None:
        """Whether the service holds the store at `milvus_uri`, asked at /healthz with a fresh nonce
        (contract/store_identity.py: the path never crosses the wire); None when it does not say."""
        nonce = secrets.token_urlsafe(24)
        try:
            answer = self._http.get("/healthz", headers={store_identity.STORE_HEADER: nonce}, timeout=self._health_timeout)
        except httpx.HTTPError:
            return None
        return _holds(answer, milvus_uri, nonce)

    def _send(self, call: Call[R]) -> R:
        try:
            response = self._http.request(**self._request_args(call))
        except httpx.HTTPError as exc:
            raise self._unreachable(exc, call) from exc
        return self._read(call, response)

    def close(self) -> None:
        self._http.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTransport(_Base):
    """AsyncClient's connection (httpx's async client) and the verbs that are more than one request."""

    def __init__(self, url: str | None = None, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 long_timeout: float = LONG_TIMEOUT_S, transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(url, api_key, timeout, long_timeout)
        self._http = httpx.AsyncClient(base_url=self.url, headers=self._headers, transport=transport, verify=_verify(self.url))

    async def _pages(self, **fields: Any) -> AsyncIterator[MemoryRecord]:
        """As Client's: every memory `page` lists with these fields, a page per request."""
        offset: int | None = 0
        while offset is not None:
            page = await self._send(REQUESTS.page(**fields, offset=offset, limit=PAGE))
            for record in page.items:
                yield record
            offset = page.next_offset

    async def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> list[int]:
        """As Client.add_many: several requests for a batch over wire.MAX_ADD_MANY items. Raises InvalidInput
        for a bad item (the requests before it stay stored)."""
        ids: list[int] = []
        for part in _parts(items):
            sent: list[int] = await self._send(REQUESTS.add_many(part, batch_size))
            ids += sent
        return ids

    async def healthy(self) -> bool:
        """As Client.healthy: whether the service answers /healthz."""
        try:
            return (await self._http.get("/healthz", timeout=self._health_timeout)).status_code == 200
        except httpx.HTTPError:
            return False

    async def holds_store(self, milvus_uri: str) -> bool | None:
        """As Client.holds_store: whether the service holds the store at `milvus_uri`, asked at /healthz with
        a fresh nonce (the path never crosses the wire); None when it does not say."""
        nonce = secrets.token_urlsafe(24)
        try:
            answer = await self._http.get("/healthz", headers={store_identity.STORE_HEADER: nonce}, timeout=self._health_timeout)
        except httpx.HTTPError:
            return None
        return _holds(answer, milvus_uri, nonce)

    async def _send(self, call: Call[R]) -> R:
        try:
            response = await self._http.request(**self._request_args(call))
        except httpx.HTTPError as exc:
            raise self._unreachable(exc, call) from exc
        return self._read(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
