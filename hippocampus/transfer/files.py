"""Writing an export's file so that a crash never leaves half of one: the file helpers of the transfer
formats, kept apart from them (standard library only) because the Client writes the files of a remote
export on the caller's machine with them (remote/calls.py) and needs nothing else of the library."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path


def save(path: str | os.PathLike[str], text: str) -> None:
    """Write the whole file, keeping the previous one as `<name>.bak`, so a failed write loses nothing."""
    write_atomically(path, [text], backup=True)


def write_atomically(path: str | os.PathLike[str], chunks: Iterable[str], backup: bool = False) -> None:
    """Write to a temporary file beside `path`, then rename it over `path`: a crash leaves the old
    file or the new one, never half of one. With `backup` the old file is first copied to `.bak`."""
    target = Path(path)
    if backup and target.exists():
        shutil.copy2(target, target.with_name(target.name + ".bak"))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
