"""The embedded store kept to its own user: a new milvus-lite store's directory is 0700 and its files
0600, and milvus-lite serves it on a Unix socket in a private temporary directory, not on a loopback
TCP port that any local user could connect to (milvus-lite has no authentication).

milvus-lite 3 starts its gRPC server on 127.0.0.1 with a free port (server_manager.py); grpc can listen
on a Unix socket and pymilvus connects to `unix:` addresses, so the server is started here the same
way, on a socket instead. Where milvus-lite's internals are not as expected (another version) or the
socket path would be too long, the store falls back to milvus-lite's own loopback port, with a log line.
An existing store whose modes let other users in is left as it is, with a warning.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
_LOCK = threading.Lock()
_SOCKETS: dict[str, str] = {}  # store path -> the private directory of its socket
_WARNED: set[str] = set()


def private_store(path: Path) -> None:
    """Before milvus-lite opens `path`: a new (absent or empty) store directory is made 0700; an
    existing store open to other users is left as it is and a one-line warning says so."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)  # mkdir's mode passes through the umask; exist_ok keeps an empty dir's old mode
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077 and str(path) not in _WARNED:
        _WARNED.add(str(path))
        log.warning("the milvus-lite store %s is open to other local users (mode %o); left as it is: "
                    "`chmod -R go-rwx %s` makes it private", path, mode, path)


def tighten_files(path: Path) -> None:
    """In a private store (its directory 0700), take group and other bits off what milvus-lite wrote
    since (it writes with the process umask). A store open to others is not touched. Never raises."""
    try:
        if not path.is_dir() or stat.S_IMODE(path.stat().st_mode) & 0o077:
            return
        for root, dirs, files in os.walk(path):
            for name, private in [(d, 0o700) for d in dirs] + [(f, 0o600) for f in files]:
                full = os.path.join(root, name)
                st = os.lstat(full)
                if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and stat.S_IMODE(st.st_mode) & 0o077:
                    os.chmod(full, stat.S_IMODE(st.st_mode) & private)
    except OSError:
        log.debug("could not tighten the modes under %s", path, exc_info=True)


def lite_address(path: str) -> str:
    """The address a MilvusClient opens for the milvus-lite store at `path`: `unix:<socket>` from a
    server started here, or `path` itself (milvus-lite's own loopback server) where that cannot be.
    Raises what milvus-lite raises when the store cannot be opened (locked by another process...)."""
    from milvus_lite.server_manager import server_manager_instance as manager

    with _LOCK:
        if path in manager._servers:  # open already: through this module, or a raw MilvusClient's port
            return f"unix:{_SOCKETS[path]}/milvus.sock" if path in _SOCKETS else path
        try:
            from milvus_lite.adapter.grpc.server import _build_server
            from milvus_lite.db import MilvusLite
        except ImportError:
            log.info("this milvus-lite cannot be served on a Unix socket; it listens on a loopback port")
            return path
        folder = tempfile.mkdtemp(prefix="hippocampus-")  # 0700: other users cannot reach the socket
        socket = os.path.join(folder, "milvus.sock")
        if len(socket.encode()) > _MAX_SOCKET_PATH:
            shutil.rmtree(folder, ignore_errors=True)
            log.info("the temporary directory's path is too long for a Unix socket; milvus-lite listens on a loopback port")
            return path
        db = None
        try:
            db = MilvusLite(path)  # takes the store's lock: DataDirLockedError when another process holds it
            server = _build_server(db, 10)
            if not server.add_insecure_port(f"unix:{socket}"):
                raise OSError(f"grpc could not listen on {socket}")
            server.start()
        except BaseException:
            if db is not None:
                db.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        with manager._lock:  # milvus-lite's manager owns it now: its release_server stops it, as for its own
            manager._servers[path] = (server, db, 0)
        _SOCKETS[path] = folder
    return f"unix:{socket}"


def forget_socket(path: str) -> None:
    """After milvus-lite released the store at `path`: remove its socket's directory."""
    with _LOCK:
        folder = _SOCKETS.pop(path, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _forget_all() -> None:
    for path in list(_SOCKETS):
        forget_socket(path)


atexit.register(_forget_all)
