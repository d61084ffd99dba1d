"""Every Client call ends (issue 57): through a recorded service that accepted and never answered,
`consolidate` hung for ever (it had no timeout) and `add` failed only after 120 s. Against a loopback socket
that accepts connections and never answers, each verb now raises ServiceUnavailable after the Client's
`timeout` (or `long_timeout` for the long verbs), both configurable. The bounds below are hang guards run in
a thread, never timings."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hippocampus import AsyncClient, Client, ConfigError, ServiceUnavailable
from hippocampus.remote.transport import DEFAULT_TIMEOUT_S, LONG_TIMEOUT_S

GUARD_S = 60  # a call still running after this is a hang: the test fails instead of the suite stalling


@pytest.fixture
def silent() -> Iterator[str]:
    """A loopback port whose kernel completes every handshake (the listen backlog) while nothing reads or answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def ends(call: Callable[[], Any]) -> BaseException | None:
    """What `call` raised (None if it returned), asserting that it ended within GUARD_S."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD_S)
    assert outcome, "the call never ended"
    return outcome[0]


def test_every_kind_of_verb_ends_with_service_unavailable(silent: str):
    with Client(silent, timeout=0.5, long_timeout=1.0) as client:
        for verb, call in {"add": lambda: client.add("I moved to Berlin", user_id="alice"),
                           "search": lambda: client.search("where?", user_id="alice"),
                           "consolidate": lambda: client.consolidate(user_id="alice"),
                           "decay": lambda: client.decay(user_id="alice"),
                           "add infer": lambda: client.add("I moved to Berlin", user_id="alice", infer=True)}.items():
            error = ends(call)
            assert isinstance(error, ServiceUnavailable), (verb, error)
            assert "did not answer" in str(error) and silent in str(error), str(error)
        assert "within 1 s" in str(ends(lambda: client.consolidate(user_id="alice")))
        assert "within 0.5 s" in str(ends(lambda: client.get(1, "alice")))


def test_the_async_client_ends_too(silent: str):
    async def consolidate() -> None:
        async with AsyncClient(silent, timeout=0.5, long_timeout=1.0) as client:
            await client.consolidate()

    error = ends(lambda: asyncio.run(asyncio.wait_for(consolidate(), GUARD_S)))
    assert isinstance(error, ServiceUnavailable) and "did not answer" in str(error)


def test_the_defaults_bound_every_call_and_none_is_refused():
    client = Client("http://127.0.0.1:9")
    assert (client.timeout, client.long_timeout) == (DEFAULT_TIMEOUT_S, LONG_TIMEOUT_S)
    assert 0 < DEFAULT_TIMEOUT_S <= 60 and DEFAULT_TIMEOUT_S < LONG_TIMEOUT_S < float("inf")
    client.close()
    for bad in (None, 0, -1, float("inf"), True, "30"):
        with pytest.raises(ConfigError):
            Client("http://127.0.0.1:9", timeout=bad)
        with pytest.raises(ConfigError):
            Client("http://127.0.0.1:9", long_timeout=bad)
