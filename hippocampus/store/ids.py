"""Memory ids assigned by hippocampus, for Milvus servers whose upsert would not keep a server-assigned id.

Why: Milvus refuses upsert on an auto-id collection before 2.4.10 (measured on 2.3.5: "the number
of fields is less than needed") and from 2.4.10 gives the upserted row a new primary key, so an
update would change a memory's id. milvus-lite keeps the id and still uses auto ids (its server
counts them: unique by construction).

An id is unique across every process writing to one store *by construction*:

    bit 62: 1 | 40 bits: ms since 2026-01-01 (until 2060) | 10 bits: worker | 12 bits: sequence

- the worker number (0..1023) is claimed from the store itself under a lease (store/leases.py):
  two live processes never hold the same number, and a number passes on only after its last
  holder's lease expired, i.e. after every millisecond that holder could still stamp;
- within a worker, (ms, sequence) never repeats: the sequence counts 4,096 ids per millisecond
  and, used up, waits for the next millisecond (never runs ahead of the clock, so a later holder
  of the same number starts in later milliseconds); a clock stepping back keeps the last one;
- ids written before (41 bits of ms since 2024 and 22 random low bits) all have bit 62 clear
  (it would be set only from 2058), so new ids never meet old ones and stay above them: ids still
  grow with time, stay positive and within Milvus' INT64 primary key. No id is rewritten.
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Protocol

from ..errors import StoreError

FLAG = 1 << 62
EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MS_BITS, WORKER_BITS, SEQ_BITS = 40, 10, 12
WORKERS = 1 << WORKER_BITS
SEQ_SPAN = 1 << SEQ_BITS
CLAIM_TRIES = 64


class WorkerSource(Protocol):
    """Where an allocator gets its worker number: a number valid now, claiming one if needed."""

    def number(self) -> int: ...


class FixedWorker:
    """A worker number given by the caller: unique only if the caller makes it so (tests, one process)."""

    def __init__(self, number: int = 0):
        if not 0 <= number < WORKERS:
            raise ValueError(f"worker number must be in 0..{WORKERS - 1}")
        self._n = number

    def number(self) -> int:
        return self._n


class LeasedWorker:
    """A worker number held under a lease in the store (group `workers`, name the number); claimed
    on first use, renewed by the lease table, claimed again (perhaps another number) if it lapsed."""

    def __init__(self, leases: object):
        self.leases = leases
        self._lease = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def number(self) -> int:
        with self._lock:
            if self._pid != os.getpid():  # a forked child holds nothing of its parent's: it claims its own
                self._pid, self._lease = os.getpid(), None
            lease = self._lease
            if lease is not None and not lease.lost and time.monotonic() < lease.valid_until:
                return int(lease.name)
            self._lease = self._claim()
            return int(self._lease.name)

    def _claim(self):  # -> Lease
        from .leases import WORKERS as GROUP
        from .leases import Lease

        tried: set[int] = set()
        for _ in range(CLAIM_TRIES):
            n = random.choice([i for i in range(WORKERS) if i not in tried])
            tried.add(n)
            got = self.leases.try_acquire(GROUP, str(n), "ids", detached=True)  # type: ignore[attr-defined]
            if isinstance(got, Lease):
                return got
        raise StoreError(f"no free id worker number after {CLAIM_TRIES} tries ({WORKERS} replicas at most)")

    @property
    def held(self) -> int | None:
        """The number held now, or None."""
        lease = self._lease
        return int(lease.name) if lease is not None and not lease.lost else None


class IdAllocator:
    """Positive int64 ids, unique across the processes of one store and increasing with time; thread-safe."""

    def __init__(self, worker: WorkerSource | None = None):
        self.worker = worker or FixedWorker(0)
        self._lock = threading.Lock()
        self._ms = -1
        self._seq = 0
        self._worker = -1

    def take(self, n: int) -> list[int]:
        out: list[int] = []
        with self._lock:
            for _ in range(n):
                worker = self.worker.number()  # checked for every id: a lapsed lease is never used
                if worker != self._worker:  # a new number: its sequence starts in a new millisecond
                    self._worker, self._ms = worker, max(self._ms + 1, _clock_ms())
                    self._seq = 0
                now = max(_clock_ms(), self._ms)
                if now != self._ms:
                    self._ms, self._seq = now, 0
                elif self._seq >= SEQ_SPAN:  # this millisecond is used up: wait for the next
                    while _clock_ms() <= self._ms:
                        time.sleep(0.0002)
                    self._ms, self._seq = _clock_ms(), 0
                out.append(compose(self._ms, worker, self._seq))
                self._seq += 1
        return out


def _clock_ms() -> int:
    return int(time.time() * 1000) - EPOCH_MS


def compose(ms: int, worker: int, seq: int) -> int:
    """The id of (ms since EPOCH_MS, worker, sequence)."""
    return FLAG | (ms << (WORKER_BITS + SEQ_BITS)) | (worker << SEQ_BITS) | seq


def worker_of(memory_id: int) -> int | None:
    """The worker number in an id of this layout; None for an id written before it (or by Milvus)."""
    if not memory_id & FLAG:
        return None
    return (memory_id >> SEQ_BITS) & (WORKERS - 1)
