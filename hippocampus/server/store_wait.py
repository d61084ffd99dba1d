"""`serve` waits for a store that another process holds for a short while (issue 57): a service
restarted while cron's `hippocampus consolidate` had the store open exited with StoreLockedError, and
every chat-hook turn after it was refused. The store (milvus-lite's lock on its folder) is retried with
a growing pause, each wait logged, up to a bound; past it the error is raised as before. A command that
holds the store meanwhile sees this service's record as starting and gives way (cli/consolidate.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import StoreLockedError

T = TypeVar("T")
log = logging.getLogger(__name__)

FIRST_PAUSE_S = 0.25
LONGEST_PAUSE_S = 2.0


def open_waiting(open_store: Callable[[], T], wait_s: float, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> T:
    """`open_store()`, tried again while it raises StoreLockedError, for up to `wait_s` seconds in all."""
    deadline, pause = clock() + max(0.0, wait_s), FIRST_PAUSE_S
    while True:
        try:
            return open_store()
        except StoreLockedError as exc:
            left = deadline - clock()
            if left <= 0:
                raise
            step = min(pause, left)
            log.warning("the store is held by another process (%s); waiting %.2f s for it (%.0f s left of %.0f s)",
                        exc, step, left, wait_s)
            sleep(step)
            pause = min(pause * 2, LONGEST_PAUSE_S)
