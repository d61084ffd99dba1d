"""The embedded store at rest (issue 29, item 8): a new milvus-lite store is the owner's alone (its
directory 0700, every file 0600 once written), and it is opened in this process (store/lite_client.py):
no loopback TCP port or socket that other local users could connect to. An existing store with looser
modes is left as it is, with a one-line warning."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.testing import DeterministicEmbedder


def _mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _loose(root: Path) -> list[str]:
    """Everything under `root` that group or others may read, write or enter."""
    out = []
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(base, name)
            if stat.S_IMODE(os.lstat(full).st_mode) & 0o077:
                out.append(f"{full} {oct(_mode(full))}")
    return out


def _listeners_of_this_process() -> list[str]:
    """Listening TCP sockets (IPv4 and IPv6) and Unix sockets whose inode is one of this process' open files."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in mine:  # 0A: LISTEN
                    found.append(f"{table} {cols[1]}")
    with open("/proc/net/unix") as f:
        for line in list(f)[1:]:
            cols = line.split()
            if int(cols[3], 16) & 0x10000 and cols[6] in mine:  # flag __SO_ACCEPTCON: listening
                found.append(f"unix {cols[-1]}")
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the listening sockets from Linux's /proc")
def test_a_new_store_is_private_and_served_on_no_port_or_socket(tmp_path: Path):
    path = tmp_path / "private.db"
    listening_before = _listeners_of_this_process()
    with Memory(milvus_uri=str(path), embedder=DeterministicEmbedder(8)) as m:
        m.add("my bank PIN is not here", user_id="alice")
        assert _mode(path) == 0o700
        assert _listeners_of_this_process() == listening_before  # no TCP port, no Unix socket
        assert [r.text for r in m.get_all("alice")] == ["my bank PIN is not here"]
    assert _mode(path) == 0o700 and _loose(path) == []
    assert [f for f in path.rglob("*") if f.is_file() and _mode(f) != 0o600] == []
    with Memory(milvus_uri=str(path), embedder=DeterministicEmbedder(8)) as again:  # and it opens again
        assert len(again.get_all("alice")) == 1


def test_an_existing_store_open_to_others_is_left_as_it_is_with_a_warning(tmp_path: Path, caplog):
    path = tmp_path / "shared.db"
    with Memory(milvus_uri=str(path), embedder=DeterministicEmbedder(8)) as m:
        m.add("written while private", user_id="bob")
    os.chmod(path, 0o755)
    files = {f: _mode(f) for f in path.rglob("*")}
    with caplog.at_level(logging.WARNING, logger="hippocampus.store.private"):
        with Memory(milvus_uri=str(path), embedder=DeterministicEmbedder(8)) as m:
            assert len(m.get_all("bob")) == 1
    warnings = [r.getMessage() for r in caplog.records if r.name == "hippocampus.store.private"]
    assert len(warnings) == 1 and "open to other local users (mode 755)" in warnings[0] and "\n" not in warnings[0]
    assert _mode(path) == 0o755 and {f: _mode(f) for f in files if f.exists()} == {f: m for f, m in files.items() if f.exists()}


def test_jieba_announces_nothing_below_a_warning() -> None:
    """milvus-lite's analyzer loads jieba, which logs its dictionary's loading to stderr at DEBUG and sets its
    logger to DEBUG when imported: the store's filter on that logger keeps a CLI's stderr clean, warnings kept."""
    import logging

    import hippocampus.store.connection  # noqa: F401 - the filter is set as the store's connection module loads

    logger, seen = logging.getLogger("jieba"), []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    level = logger.level
    logger.setLevel(logging.DEBUG)  # as jieba's import leaves it
    logger.addHandler(handler)
    try:
        logger.debug("Building prefix dict from the default dictionary ...")
        logger.warning("a real jieba warning")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert [r.getMessage() for r in seen] == ["a real jieba warning"]
