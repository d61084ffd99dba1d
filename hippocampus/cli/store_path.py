"""Which store a command may open, decided before anything is opened, so that a mistyped `--uri`
never becomes a new, empty store (`hippocampus --uri ./aa.db list` beside `a.db`).

The rule, for a local (milvus-lite) store path that does not exist yet:
- the default store (`memories.db` in the home, `HIPPOCAMPUS_HOME`) is made on first use by any
  command: no typo can name it;
- `--create` (setting `create_store_dir: true`) makes a new store anywhere: the user said so;
- a command that only reads (list, get, search, history, stats, export, graph, context, ...)
  never makes one: `no store at ./aa.db (did you mean ./a.db?)`, naming the nearest store beside it;
- a command that writes new memories (`CREATES`: add, import, mcp, serve) makes one only in a directory
  that holds no store yet; beside an existing store a new name is refused the same way, and the
  line says that `--create` makes it.
An existing but empty directory at the path is no store either (milvus-lite would fill it).
A command refused for the caller's mistake (exit 2: InvalidInput, ConfigError) after it made a new store
leaves nothing behind: `discard_fresh_store` removes what it made (`--uri ./y.db add x -m created_at=5`).
The library's `Memory(milvus_uri=...)` keeps its own rule (only a missing directory is refused).
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path
from typing import Any

from ..errors import ConfigError

CREATES = frozenset({"add", "import", "mcp", "serve"})  # the commands that may make a first store in an empty directory
STORE_SUFFIX = ".db"
_FRESH: dict[str, Path | bool | None] = {"path": None, "dir_was_there": False}  # a store this command is about to make (see discard_fresh_store)


def holds_store(path: Path) -> bool:
    """Whether `path` exists and is not an empty directory (what milvus-lite leaves is never empty)."""
    if not path.exists():
        return False
    try:
        return not path.is_dir() or any(path.iterdir())
    except OSError:
        return True


def default_stores() -> set[Path]:
    """The default store paths: the home's memories.db (as imported, and as HIPPOCAMPUS_HOME says now)."""
    from ..config import DEFAULT_HOME

    homes = {DEFAULT_HOME, Path(os.environ.get("HIPPOCAMPUS_HOME") or DEFAULT_HOME)}
    return {(home / "memories.db").expanduser().absolute() for home in homes}


def stores_beside(path: Path) -> list[str]:
    """Names of the existing stores (*.db) in the directory of `path`, itself excluded."""
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return []
    return sorted(e.name for e in entries if e.name.endswith(STORE_SUFFIX) and e.name != path.name and holds_store(e))


def nearest(name: str, candidates: list[str]) -> str | None:
    """The candidate closest to `name` (a typo's likely target); None when there is none."""
    best = difflib.get_close_matches(name, candidates, n=1, cutoff=0.0)
    return best[0] if best else None


def _as_typed(uri: str, name: str) -> str:
    """`name` in the directory `uri` names, spelled the way the user spelled `uri` ("./a.db")."""
    own = Path(uri).name
    return uri[: len(uri) - len(own)] + name if own and uri.endswith(own) else str(Path(uri).with_name(name))


def refusal(uri: str, command: str | None, create_store_dir: bool, defaults: set[Path] | None = None) -> str | None:
    """Why `command` may not open the store at `uri` (one line), or None when it may. Pure but for
    looking at the file system."""
    if "://" in uri or create_store_dir:
        return None
    path = Path(uri).expanduser().absolute()
    if holds_store(path) or path in (default_stores() if defaults is None else defaults):
        return None
    others = stores_beside(path)
    if command in CREATES and not others:
        return None  # the first store of a directory: nothing there to mistype
    near = nearest(path.name, others)
    line = f"no store at {uri}" + (f" (did you mean {_as_typed(uri, near)}?)" if near else "")
    if command in CREATES:
        line += "; pass --create to make a new store there"
    return line


def check_store_path(settings: dict[str, Any], command: str | None) -> None:
    """Raise ConfigError (one line) when `command` may not open the store these settings name."""
    from pydantic import ValidationError

    from ..config import MemoryConfig

    try:
        config = MemoryConfig(**settings)
    except ValidationError as exc:  # one line naming the option, never pydantic's report (`--uri ./a`)
        raise ConfigError(settings_error(exc)) from None
    why = refusal(config.milvus_uri, command, config.create_store_dir)
    if why:
        raise ConfigError(why)
    if "://" not in config.milvus_uri:
        path = Path(config.milvus_uri).expanduser().absolute()
        _FRESH["path"], _FRESH["dir_was_there"] = (None, False) if holds_store(path) else (path, path.is_dir())


OPTION_OF = {"milvus_uri": "--uri", "collection_name": "--collection"}


def settings_error(exc: Any) -> str:
    """A pydantic ValidationError of MemoryConfig as one line: `--uri: a local milvus_uri must ...`."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err.get("loc", ())) or "settings"
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{OPTION_OF.get(field, field)}: {message}")
    return "; ".join(parts) or "invalid settings"


def forget_fresh_store() -> None:
    """Start or end a command: no store made by it yet."""
    _FRESH["path"], _FRESH["dir_was_there"] = None, False


def discard_fresh_store() -> None:
    """Remove the store this command made, if it made one: called when the command was refused for
    the caller's mistake, which the library reports before it writes anything. An empty directory
    that was there before stays there, empty again."""
    path, dir_was_there = _FRESH["path"], bool(_FRESH["dir_was_there"])
    forget_fresh_store()
    if not isinstance(path, Path) or not path.is_dir():
        return
    if dir_was_there:
        for entry in path.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
