"""What server/connections.py relies on inside uvicorn (issue 56): uvicorn documents no deadline on a
request's head or body and no eviction past a connection cap, so `serve` keeps its subclass of uvicorn's
h11 protocol, with uvicorn pinned to one minor version in pyproject.toml. These tests hold the pin and
the internals the subclass reads (`connections`, `conn.their_state`, `cycle.response_complete`,
`transport`, `loop`, and the hooks it extends), so a uvicorn that moves them fails here, not in production."""

from __future__ import annotations

import asyncio
from pathlib import Path
from unittest import mock

import h11
import uvicorn
from uvicorn.config import Config
from uvicorn.server import ServerState

from hippocampus.server.connections import BoundedH11Protocol, protocol_class, uvicorn_settings

ROOT = Path(__file__).resolve().parents[2]


def test_uvicorn_is_pinned_to_the_minor_version_the_subclass_was_checked_against() -> None:
    # the dependency line read as text: tomllib is 3.11's, and the package supports 3.10
    pin = [line.strip() for line in (ROOT / "pyproject.toml").read_text().splitlines() if line.strip().startswith('"uvicorn')]
    major_minor = ".".join(uvicorn.__version__.split(".")[:2])
    assert len(pin) == 1 and f">={major_minor}" in pin[0].replace(" ", "") and "<" in pin[0], (pin, uvicorn.__version__)


async def _app(scope, receive, send):  # pragma: no cover - never called: no request completes here
    raise AssertionError("no request should reach the app")


def _transport() -> mock.Mock:
    transport = mock.Mock(spec=asyncio.Transport)
    transport.get_extra_info.return_value = None
    transport.is_closing.return_value = False
    return transport


def test_the_internals_the_bounded_protocol_reads_are_where_it_reads_them() -> None:
    loop = asyncio.new_event_loop()
    try:
        config = Config(_app, **uvicorn_settings(head_timeout_s=5, body_timeout_s=5, max_connections=1))
        assert issubclass(config.http, BoundedH11Protocol)
        config.load()
        assert config.http_protocol_class is config.http  # a protocol class is taken as given
        state = ServerState()
        proto = protocol_class(head_timeout_s=5, body_timeout_s=5, max_connections=1)(config, state, {}, _loop=loop)
        assert proto.loop is loop and proto.connections is state.connections and isinstance(proto.conn, h11.Connection)
        first = _transport()
        proto.connection_made(first)
        assert proto in state.connections and proto.transport is first and proto._waiting == "head"
        proto.data_received(b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
        assert proto.conn.their_state is h11.SEND_BODY and proto.cycle is not None
        assert proto.cycle.response_complete is False and proto._waiting == "body"  # handle_events -> _follow
        other = protocol_class(max_connections=1)(config, state, {}, _loop=loop)
        second = _transport()
        other.connection_made(second)  # over the cap of 1, and the first is busy with a body: the new one goes
        second.close.assert_called_once()
        proto.connection_lost(None)
        assert proto not in state.connections and proto._deadline is None
        other.connection_lost(None)
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
