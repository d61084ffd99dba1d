"""The LangGraph store's TTL sweep (langgraph.py): `sweep_ttl()` and the sweeper thread LangGraph's SQLite
and Postgres stores offer (`start_ttl_sweeper` / `stop_ttl_sweeper`).

An item with a TTL is a memory with an `expires_at`; once it passes, the item already leaves `get`,
`search` and listings (the memory's reads leave it out). A sweep deletes those memories for good from the
store's point of view, through `delete_many` (their history kept, as every delete's: `undo` brings one
back), so a store that is swept holds no expired rows. Precision is the memory's: whole seconds.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import Any

from ..models import now_ts
from ..store.expiry import expired

__all__ = ["Sweeper", "sweep"]

log = logging.getLogger(__name__)
CHUNK = 1000  # delete_many takes at most this many


def sweep(store: Any) -> int:
    """Delete the expired items of `store` (a HippocampusStore), every user it may see; returns how many."""
    users = [store.user_id] if store.user_id is not None else store.known_users()
    now, gone = now_ts(), 0
    for user_id in users:
        records = store.memory.get_all(user_id, filters={"metadata.lg_scope": store.scope}, include_expired=True)
        ids = [r.id for r in records if "lg_key" in r.metadata and expired(r.metadata, now)]
        for start in range(0, len(ids), CHUNK):
            gone += len(store.memory.delete_many(ids[start: start + CHUNK], user_id).deleted)
    return gone


class Sweeper:
    """A daemon thread that sweeps a store every `interval_minutes` until stopped."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._stop = threading.Event()
        self._future: concurrent.futures.Future[None] | None = None
        self._thread: threading.Thread | None = None

    def start(self, interval_minutes: float | None) -> concurrent.futures.Future[None]:
        """Start sweeping (once: a running sweeper's future is returned again)."""
        if self._future is not None and not self._future.done():
            return self._future
        if interval_minutes is None or not interval_minutes > 0:
            raise ValueError("a TTL sweeper needs sweep_interval_minutes more than 0 (the store's ttl= or the call's)")
        self._stop.clear()
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._future = future

        def loop() -> None:
            try:
                while not self._stop.wait(float(interval_minutes) * 60):
                    try:
                        sweep(self.store)
                    except Exception as exc:  # one failed sweep: logged, the next one tries again
                        log.warning("TTL sweep failed: %s: %s", type(exc).__name__, exc)
            finally:
                future.set_result(None)

        self._thread = threading.Thread(target=loop, name="hippocampus-ttl-sweeper", daemon=True)
        self._thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop it; True when it has stopped (or never ran) within `timeout` seconds."""
        if self._thread is None:
            return True
        self._stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()
