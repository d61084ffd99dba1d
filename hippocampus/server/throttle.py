"""Failed authentications counted per client address, shared by the guard (/v1, /mcp) and the UI's login."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable


class AuthThrottle:
    """Failed authentications per client address: after `limit` in `window_s`, `retry_after` says how
    long until the oldest of them leaves the window. Bounded: the last `limit` failures of at most
    `max_clients` addresses (the least recently failing are forgotten first); an IPv6 client counts by
    its /64, which one machine usually holds whole. Thread-safe (the UI's login runs in a worker thread).

    The throttle never checks or delays a right key: a caller checks the key first, then asks
    `retry_after` only for a wrong one (429 instead of 401) and records it with `failure`."""

    def __init__(self, limit: int = 10, window_s: float = 60.0, max_clients: int = 4096,
                 clock: Callable[[], float] = time.monotonic):
        self.limit, self.window_s, self.max_clients, self.clock = limit, window_s, max_clients, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(client: str) -> str:
        try:
            address = ipaddress.ip_address(client)
        except ValueError:
            return client
        if isinstance(address, ipaddress.IPv6Address):
            if address.ipv4_mapped is not None:
                return str(address.ipv4_mapped)
            if not address.is_loopback:
                return str(ipaddress.ip_network(f"{address}/64", strict=False))
        return str(address)

    def retry_after(self, client: str) -> float | None:
        """Seconds until `client` may be told 401 again; None while it is under the limit."""
        with self._lock:
            times = self._failures.get(self._key(client))
            if times is None or len(times) < self.limit:
                return None
            wait = times[0] + self.window_s - self.clock()
            return wait if wait > 0 else None

    def failure(self, client: str) -> None:
        """Count one failed authentication of `client`."""
        key = self._key(client)
        with self._lock:
            times = self._failures.pop(key, None) or deque(maxlen=self.limit)
            times.append(self.clock())
            self._failures[key] = times
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)

    def __len__(self) -> int:
        return len(self._failures)
