"""Keys re-read while the service runs: `kill -HUP <pid>` (`hippocampus service status` shows the
pid) makes a running `serve` read its keys again, so revoking or adding a key needs no restart (issue 42).

The keys are read in full first; only a ring that loads is swapped in, in one assignment (auth.KeyRing
.replace), so a request in flight sees the old keys or the new ones, and no connection is dropped. A
file that does not load (a typo, a weak key) keeps the keys in force and logs why. A reload never
opens a keyed service: a file emptied by mistake would let every local user in, so going from keys
to none needs a restart. The Web UI's sessions of a key that is gone end at once: a session is bound to
the fingerprint of the key that opened it, not to its tenant, so a key rotated under the same name,
users and agents ends its sessions too (issue 57).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from ..errors import ConfigError
from .auth import KeyRing

log = logging.getLogger("hippocampus.server")
_RELOADING = threading.Lock()  # two quick SIGHUPs: the second waits for the first
_ASKED = threading.Event()  # a SIGHUP came while the service was starting (hold_sighup)


def reload_keys(state: Any) -> bool:
    """Read the keys again from where `serve` read them and swap them in (see the module docstring).
    `state` is the app's state (keys, ui_sessions). True when the new keys are in force."""
    ring: KeyRing = state.keys
    with _RELOADING:
        try:
            fresh = KeyRing.load(ring.keys_file, ring.env)
        except ConfigError as exc:
            log.error("keys not reloaded, the %d key(s) in force stay: %s", len(ring), exc)
            return False
        if fresh.is_open and not ring.is_open:
            log.error("keys not reloaded: no keys left, and a reload never opens a keyed service (restart "
                      "it to serve without keys); the %d key(s) in force stay", len(ring))
            return False
        before = len(ring)
        ring.replace(fresh)
        in_force = ring.fingerprints
        sessions = getattr(state, "ui_sessions", None)
        ended = sessions.retain(lambda session: session.key in in_force) if sessions is not None else 0
        log.info("keys reloaded: %d key(s) (were %d); %d Web UI session(s) of removed keys ended", len(ring), before, ended)
        return True


def hold_sighup() -> None:
    """From the first moment of `serve`: a SIGHUP is remembered, not fatal. Why: SIGHUP's default action
    ends the process, and opening the store and loading the embedder take seconds before the service can
    reload anything (issue 57: a `kill -HUP` sent just after a start, as a deploy script sends it after
    editing the keys, ended the service). reload_on_sighup reloads once for a SIGHUP held here.
    Main thread only (elsewhere, and where there is no SIGHUP, nothing is done)."""
    if hasattr(signal, "SIGHUP") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGHUP, lambda signum, frame: _ASKED.set())


def reload_on_sighup(state: Any) -> None:
    """SIGHUP reloads the keys, in a thread of its own (a signal handler only starts it: reading
    files and logging inside the handler could interrupt a log call half done). Main thread only.
    A SIGHUP held while the service started (hold_sighup) reloads once now: the keys were read before
    the store opened, and the file may have changed since."""

    def on_hup(signum: int, frame: Any) -> None:
        threading.Thread(target=reload_keys, args=(state,), name="keys-reload", daemon=True).start()

    signal.signal(signal.SIGHUP, on_hup)
    if _ASKED.is_set():
        _ASKED.clear()
        on_hup(signal.SIGHUP, None)
