"""The embedded store kept to its own user: a new milvus-lite store's directory is 0700 and its files
0600. milvus-lite has no authentication; a local store is opened in this process (store/lite_client.py),
so no port or socket is served at all. An existing store whose modes let other users in is left as it
is, with a warning.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)
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
