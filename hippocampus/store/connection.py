"""Opening and releasing Milvus: a server URI through pymilvus' MilvusClient, a local milvus-lite path
through store/lite_client.LiteClient (milvus-lite's in-process API: no server, no socket, no pymilvus),
checked first. Both clients implement store/backend.StoreClient. A local store that cannot open is one
error naming its cause: its lock held by another process (StoreLockedError) or a damaged store.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..errors import SchemaMismatchError, StoreCorruptedError, StoreError, StoreLockedError
from .backend import BackendError, StoreClient, refused
from .private import private_store, tighten_files

log = logging.getLogger(__name__)
_LITE_MARKERS = ("collections", "databases", "LOCK", ".database-staging")  # what milvus-lite creates first


class _DropNoise(logging.Filter):
    """milvus-lite has no MVCC timestamps; pymilvus warns about it on every paged query."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "mvccTs" not in record.getMessage()


_PREPARED: set[str] = set()  # "loggers", "pymilvus", "lite": what connect() has set up in this process (nothing at import)
_PREPARE_LOCK = threading.Lock()


def _quiet_loggers(server: bool) -> None:
    """Filters on the store libraries' loggers, added once, when the first store opens (not at import:
    importing hippocampus leaves other libraries' loggers as they are); pymilvus' only when a server
    store opens (a local store never imports pymilvus)."""
    with _PREPARE_LOCK:
        if "loggers" not in _PREPARED:
            _PREPARED.add("loggers")
            # milvus-lite's jieba analyzer announces its dictionary on stderr at DEBUG (jieba sets its logger to DEBUG when
            # imported, so a level set here would not last): a filter on its logger, without importing jieba for it
            logging.getLogger("jieba").addFilter(_below_warning)
        if server and "pymilvus" not in _PREPARED:
            _PREPARED.add("pymilvus")
            logging.getLogger("pymilvus").addFilter(_DropNoise())
            # pymilvus 3 logs it from the iterator's own logger (a parent's filter does not see it); Milvus 2.3 has none either
            logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(_DropNoise())
            for handler in logging.getLogger("pymilvus").handlers:
                handler.addFilter(_DropNoise())


def _below_warning(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def _lite_environment() -> None:
    """milvus-lite searches its in-memory table row by row in Python (seconds per filtered search with
    many rows unflushed: docs/decisions.md, "User buckets and a small memtable"); a small memtable budget
    keeps most rows in flushed, indexed segments. milvus-lite
    reads its documented MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES once, as it is imported: set here, as the
    first milvus-lite store opens and before anything of ours imports milvus_lite (an explicit value wins)."""
    with _PREPARE_LOCK:
        if "lite" not in _PREPARED:
            _PREPARED.add("lite")
            os.environ.setdefault("MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES", str(8 << 20))


_LITE_KEEPALIVE = {"grpc.keepalive_time_ms": 360_000, "grpc.keepalive_permit_without_calls": False}


def connect(uri: str, token: str | None) -> StoreClient:
    """A client for a server URI, or for a milvus-lite path after checking it is (or can become) a store."""
    if "://" in uri:
        return _server(uri, token)
    _quiet_loggers(server=False)
    _lite_environment()
    path = Path(uri).expanduser().absolute()
    if path.suffix != ".db":
        raise StoreError(f"a milvus-lite path must end in .db, got {uri!r}", uri=uri)
    if path.exists() and not path.is_dir():
        raise SchemaMismatchError(
            f"{path} exists and is not a milvus-lite store directory (a file, perhaps a milvus-lite 2.x "
            "store); choose another milvus_uri",
            uri=uri,
        )
    if path.is_dir() and any(path.iterdir()) and not any((path / m).exists() for m in _LITE_MARKERS):
        raise StoreCorruptedError(
            f"{path} is a non-empty directory but not a milvus-lite store; choose another milvus_uri",
            uri=uri,
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    private_store(path)
    from .lite_client import LiteClient

    try:
        client = LiteClient(str(path))
    except Exception as exc:
        _lite_open_failed(str(path), exc)  # raises
    tighten_files(path)
    return client


def _server(uri: str, token: str | None) -> StoreClient:
    """pymilvus' client of a Milvus server (or `milvus-lite server`)."""
    _quiet_loggers(server=True)
    from pymilvus import MilvusClient

    try:
        # milvus-lite's gRPC server keeps grpc's default ping policy (at most one ping in 5 minutes without
        # data), so pymilvus' 10 s keepalive drew GOAWAY too_many_pings in long runs (on stderr, and for
        # `milvus-lite server` on loopback a dead shared channel: "Fail connecting to server"); a server on
        # this machine needs no keepalive to find a dead peer
        options = {"grpc_options": _LITE_KEEPALIVE} if _loopback(uri) else {}
        return MilvusClient(uri=uri, token=token or "", **options)  # type: ignore[no-any-return]
    except Exception as exc:
        raise StoreError(f"cannot open Milvus at {uri}: {type(exc).__name__}: {exc}", uri=uri, original_error=exc) from exc


def _loopback(uri: str) -> bool:
    from urllib.parse import urlsplit

    return (urlsplit(uri).hostname or "") in ("127.0.0.1", "localhost", "::1")


def _lite_open_failed(uri: str, exc: Exception) -> NoReturn:
    """Raise the error that names why milvus-lite could not open `uri`: its lock held by another process,
    or a damaged store."""
    text = f"{type(exc).__name__}: {exc}"
    if type(exc).__name__ == "DataDirLockedError" or _lite_locked_elsewhere(uri):
        holder = _lock_holder(uri)
        raise StoreLockedError(
            f"the milvus-lite store at {uri} is locked by another process{f' (pid {holder})' if holder else ''}. "
            "milvus-lite allows one process per path: close the other process (or route its work through "
            "one long-running process), or point milvus_uri at a Milvus server (http://...) to share a store.",
            uri=uri,
            original_error=exc,
        ) from exc
    if Path(uri).is_dir():
        raise StoreCorruptedError(
            f"cannot open the milvus-lite store at {uri} ({text}): it is damaged or not readable by this user",
            uri=uri,
            original_error=exc,
        ) from exc
    raise StoreError(f"milvus-lite could not open {uri}: {text}", uri=uri, original_error=exc) from exc


def release(uri: str) -> None:
    """After a local store's client closed (which released milvus-lite's lock with the last client of the
    path): the modes of what milvus-lite wrote since, tightened."""
    if "://" not in uri:
        tighten_files(Path(uri).expanduser().absolute())


def _lite_locked_elsewhere(path: str) -> bool:
    """True when another process holds milvus-lite's advisory lock on the directory."""
    import fcntl

    lock_file = os.path.join(path, "LOCK")
    if not os.path.exists(lock_file):
        return False
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _lock_holder(path: str) -> int | None:
    """The pid holding the flock on the store's LOCK file, from /proc/locks (Linux); None when unknown."""
    try:
        st = os.stat(os.path.join(path, "LOCK"))
        with open("/proc/locks") as locks:
            for line in locks:
                parts = line.split()
                if len(parts) > 5 and parts[1] == "FLOCK" and parts[-1] != "->":
                    major, minor, inode = parts[5].split(":")
                    if (int(inode), int(major, 16), int(minor, 16)) == (st.st_ino, os.major(st.st_dev), os.minor(st.st_dev)):
                        pid = int(parts[4])
                        return pid if pid != os.getpid() else None
    except (OSError, ValueError):
        pass
    return None


# What another process creating the same collection at the same moment makes us see: its create won
# ("already exists"; milvus-lite's server: "File exists", "No such file" for its half-written files), or
# it made the collection but not yet its index ("index not found" on load, Milvus 2.3), or both of us
# made the index at once.
_RACE_MARKERS = ("already exist", "index not found", "index not exist", "index doesn't exist", "no index", "not found",
                 "at most one distinct index", "not loaded", "creating index", "duplicate", "file exists",
                 "no such file")
CREATE_ATTEMPTS = 8


def ensure_collection(client: StoreClient, uri: str, name: str, make: Callable[[], tuple[Any, Any, dict[str, Any]]],
                      check: Callable[[], None] | None = None) -> bool:
    """Create `name` if it is missing, else index and load it; True when this call created it.

    Idempotent under races (several replicas starting together on a fresh server): a process that
    finds the collection made by another checks it (`check`), creates any index the other has not
    made yet (the same parameters, so whoever is first wins and the rest are no-ops), and loads it;
    one that loses the create ("already exists") or loads too early ("index not found") looks again
    after a short random wait. `make` gives (schema, index_params, create kwargs)."""
    from .schema import remove_half_created

    for attempt in range(CREATE_ATTEMPTS):
        try:
            if client.has_collection(name):
                if check is not None:
                    check()
                _index_missing(client, name, make()[1])
                client.load_collection(name)
                return False
            schema, index, kwargs = make()
            create_indexed(client, name, schema, index, **kwargs)
            return True
        except Exception as exc:
            if not refused(exc):
                raise
            if remove_half_created(uri, name):  # a milvus-lite creation a killed process left half done
                continue
            text = str(exc).lower()
            if attempt == CREATE_ATTEMPTS - 1 or not any(m in text for m in _RACE_MARKERS):
                raise
            log.info("collection %r being made by another process (%s); looking again", name, exc)
            time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")  # pragma: no cover


def _index_missing(client: StoreClient, name: str, index: Any) -> None:
    """Create the indexes of `index` whose field has none yet (another process' creation stopped, or is
    still going, between making the collection and indexing it)."""
    if not index:
        return
    fields = {f["name"] for f in client.describe_collection(name).get("fields", [])}
    for param in list(index):  # a collection made by an older version may lack a field (sparse, xvector): left alone
        if param.field_name not in fields or client.list_indexes(name, field_name=param.field_name):
            continue
        one = client.prepare_index_params()
        one.append(param)
        client.create_index(name, one, sync=False)
    wait_for_indexes(client, name)


# pymilvus waits for a new index by sleeping 0.5 s before each look at its state: 1.5 s for a new store of
# three indexes, paid by every first `hippocampus add` (milvus-lite builds an empty collection's index at
# once). We send the index requests without that wait and look at once, then back off.
_INDEX_LOOKS = (0.0, 0.005, 0.02, 0.05, 0.1, 0.2)
INDEX_WAIT_S = 300.0


def create_indexed(client: StoreClient, name: str, schema: Any, index: Any, **kwargs: Any) -> None:
    """`create_collection(name, schema=..., index_params=...)` (the collection, its indexes, loaded) without
    pymilvus's sleeping wait for each index."""
    client.create_collection(name, schema=schema, **kwargs)
    if index:
        client.create_index(name, index, sync=False)
        wait_for_indexes(client, name)
    client.load_collection(name)


def wait_for_indexes(client: StoreClient, name: str, timeout_s: float = INDEX_WAIT_S) -> None:
    """Until every index of `name` is built: a BackendError when one failed or the time ran out. A
    server that does not report a state is taken at its word (loading then says what is missing)."""
    deadline, looks = time.monotonic() + timeout_s, iter(_INDEX_LOOKS)
    while True:
        states = {n: str(client.describe_index(name, n).get("state") or "Finished") for n in client.list_indexes(name)}
        failed = sorted(n for n, state in states.items() if state == "Failed")
        if failed:
            raise BackendError(f"building the index of {name!r} on {', '.join(failed)} failed")
        if all(state == "Finished" for state in states.values()):
            return
        if time.monotonic() > deadline:
            raise BackendError(f"the indexes of {name!r} were not built in {timeout_s:.0f} s: {states}")
        time.sleep(next(looks, 0.5))
