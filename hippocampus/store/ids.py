"""Memory ids assigned by hippocampus, for Milvus servers whose upsert would not keep a server-assigned id.

Why: Milvus refuses upsert on an auto-id collection before 2.4.10 (measured on 2.3.5: "the number
of fields is less than needed") and from 2.4.10 gives the upserted row a new primary key, so an
update would change a memory's id. milvus-lite keeps the id and still uses auto ids.

An id is 41 bits of milliseconds since 2024 (until 2093) and 22 low bits that start at a random
point (below 2^21) each millisecond and count up: ids grow with time like Milvus' own, never repeat
within a process (one allocator per process, reset after a fork), and two processes collide only if
they write in the same millisecond from overlapping ranges (1 in 2 million for two single writes).
"""

from __future__ import annotations

import os
import secrets
import threading
import time

_EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
_LOW_BITS = 22
_LOW_SPAN = 1 << _LOW_BITS


class IdAllocator:
    """Positive int64 ids, unique within the process and increasing with time; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._ms = -1
        self._low = _LOW_SPAN

    def take(self, n: int) -> list[int]:
        out: list[int] = []
        with self._lock:
            if self._pid != os.getpid():  # a forked child must not continue its parent's sequence
                self._pid, self._ms, self._low = os.getpid(), -1, _LOW_SPAN
            for _ in range(n):
                now = max(int(time.time() * 1000) - _EPOCH_MS, self._ms)
                if now != self._ms or self._low >= _LOW_SPAN:
                    if now == self._ms:  # this millisecond's range is used up: borrow the next one
                        now += 1
                    self._ms, self._low = now, secrets.randbelow(_LOW_SPAN // 2)
                out.append((self._ms << _LOW_BITS) | self._low)
                self._low += 1
        return out


_PROCESS = IdAllocator()


def new_ids(n: int) -> list[int]:
    """`n` fresh ids from this process's allocator, shared by every store in it."""
    return _PROCESS.take(n)
