"""The library's clock: what writes stamp and what aging counts from; a simulation (or a test of
aging) runs the whole library on another clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

_CLOCK: list[Callable[[], float]] = [time.time]  # replaced only by `simulated_clock`


def now_ts() -> int:
    """The library's clock, epoch seconds (UTC): what writes stamp and what aging counts from."""
    return int(_CLOCK[-1]())


@contextmanager
def simulated_clock(clock: Callable[[], float]) -> Iterator[None]:
    """Run the library on another clock (simulations: scripts/simulate_lifecycle.py, tests of aging).
    Process-wide while the block runs: not for a service that serves real users at the same time."""
    _CLOCK.append(clock)
    try:
        yield
    finally:
        _CLOCK.remove(clock)


def ts_to_iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()
