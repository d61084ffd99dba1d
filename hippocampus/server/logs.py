"""What the service writes about itself, kept free of user data (issue 42, item 10): a failure's kind and
where in the code it happened, never its message (a pydantic error quotes the stored value, a store
error the filter with the user id); files it creates private to its user (umask 077 at start)."""

from __future__ import annotations

import os
import traceback

PRIVATE_UMASK = 0o077  # files 0600, folders 0700: the store, milvus-lite's own files and logs, exports


def frames(exc: BaseException, keep: int = 8) -> str:
    """The innermost `keep` frames of `exc` as "file:line in function", without its message or any value."""
    summary = traceback.extract_tb(exc.__traceback__)[-keep:]
    return " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in reversed(summary))


def described(exc: BaseException) -> str:
    """A failure for the log: its class and its frames, nothing it carried."""
    return f"{type(exc).__name__} at {frames(exc) or 'unknown'}"


def private_files() -> int:
    """Make every file and folder this process (and a store server it starts) creates from now on private
    to its user; returns the umask that was in force."""
    return os.umask(PRIVATE_UMASK)
