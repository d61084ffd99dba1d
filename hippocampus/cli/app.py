"""The `hippocampus` command line: add, search, get, list, update, delete, reset, history, stats, demo,
consolidate, schedule, serve, mcp, the lifecycle's decay, context, curate, restore, and export / import
(MEMORY.md, JSONL).

Every command prints a rich table for people and, with `--json`, plain JSON for scripts. The store
comes from the global options `--uri` / `--collection`, otherwise from MemoryConfig (keyword >
HIPPOCAMPUS_* environment > config.yaml > defaults). With `--server URL` (or HIPPOCAMPUS_SERVER)
every command goes through a running service instead (a Client has Memory's verbs), so a cron
line can consolidate while the agent's service holds the store. Errors of the library print one line on
stderr and exit with 2 for the caller's mistakes (InvalidInput, ConfigError) and 1 otherwise
(NotFound, StoreError, EmbeddingError, LLMError); no traceback.

Other modules add commands by decorating `app.command()` after `from .app import app`, and are
imported in the marked block at the bottom of this file.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional, TypeVar

import typer

from ..defaults import ENV_SERVER
from ..errors import ConfigError, HippocampusError, InvalidInput
from . import render

if TYPE_CHECKING:  # imported by the commands that open a store: `--help` starts without them
    from ..client import Client
    from ..memory import Memory

F = TypeVar("F", bound=Callable[..., Any])
USER_EXIT = 2  # the caller's mistake: bad input or settings
FAIL_EXIT = 1  # the operation failed: not found, store, embedder, LLM


def exit_code(exc: HippocampusError) -> int:
    return USER_EXIT if isinstance(exc, (InvalidInput, ConfigError)) else FAIL_EXIT


def report(exc: HippocampusError) -> None:
    """The error as one line on stderr; a store held by a recorded service names the service."""
    from .service import locked_hint

    render.err_console().print(render.error(exc, locked_hint(exc)))


def friendly_errors(fn: F) -> F:
    """Turn the library's errors into one line on stderr and an exit code, for every command."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HippocampusError as exc:
            report(exc)
            raise typer.Exit(code=exit_code(exc)) from None

    return wrapper  # type: ignore[return-value]


class _App(typer.Typer):
    """A Typer whose commands all report library errors as one line (see `friendly_errors`)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(fn: F) -> F:
            register(friendly_errors(fn))
            return fn

        return decorator


app = _App(
    name="hippocampus",
    help="Long-term memory for LLM agents over one Milvus collection. Try `hippocampus demo`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_STORE: dict[str, Any] = {"milvus_uri": None, "collection_name": None, "create_store_dir": None}
_SERVER: dict[str, Optional[str]] = {"url": None}


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"hippocampus {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    uri: Optional[str] = typer.Option(
        None, "--uri", help="store: a milvus-lite path ending in .db or http://host:19530 (default: settings)"
    ),
    collection: Optional[str] = typer.Option(None, "--collection", help="collection name (default: settings, 'memories')"),
    create: bool = typer.Option(
        False, "--create", help="make a new store's missing directory (otherwise only an existing one or the default home)"
    ),
    server: Optional[str] = typer.Option(
        None, "--server", envvar=ENV_SERVER, help="go through a running service, e.g. http://127.0.0.1:8765 (key: HIPPOCAMPUS_API_KEY)"
    ),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version, help="print the version and exit"),
) -> None:
    """Global options, applied to every command's store."""
    _STORE["milvus_uri"] = uri
    _STORE["collection_name"] = collection
    _STORE["create_store_dir"] = True if create else None
    _SERVER["url"] = server


def store_overrides() -> dict[str, Any]:
    return {k: v for k, v in _STORE.items() if v is not None}


def open_memory(**overrides: Any) -> Memory | Client:
    """The Memory the global options ask for, or a Client to the service named by --server;
    other command modules use this too."""
    if _SERVER["url"]:
        if store_overrides():
            raise ConfigError("--uri/--collection/--create choose a store to open here; with --server the service's store is used")
        from ..client import Client

        return Client(_SERVER["url"])
    from ..memory import Memory

    return Memory(**{**store_overrides(), **overrides})


def parse_meta(pairs: Optional[List[str]], option: str = "--meta") -> dict[str, Any]:
    """`key=value` pairs; a value that parses as JSON (numbers, true, lists) keeps its type. `option`
    names the option in the error, as the user typed it (`--meta`, `--filter`)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"{option} takes key=value, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip()] = value
    return out


def emit(as_json: bool, payload: Any, table: Any = None, message: str | None = None) -> None:
    """JSON on stdout for scripts, or a table / message for people."""
    if as_json:
        typer.echo(render.dumps(payload))
        return
    console = render.console()
    if table is not None:
        console.print(table)
    if message:
        console.print(render.literal(message))


def read_text(text: Optional[str], file: Optional[Path]) -> str:
    """The text of `add`: the argument, stdin for `-`, or a file; InvalidInput when none, both, or empty.
    One trailing line break (what `echo` and editors add) is dropped."""
    if (text is None) == (file is None):
        raise InvalidInput("give the text to remember: as an argument, - to read stdin, or --file PATH (one of them)")
    if file is not None:
        try:
            raw, source = file.read_bytes().decode("utf-8"), f"--file {str(file)!r}"
        except FileNotFoundError:
            raise InvalidInput(f"no such file: {str(file)!r}") from None
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"--file {str(file)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise InvalidInput(f"cannot read --file {str(file)!r}: {exc.strerror}") from None
    elif text == "-":
        raw, source = sys.stdin.read(), "stdin"
    else:
        return text
    if raw.endswith("\n"):
        raw = raw[:-2] if raw.endswith("\r\n") else raw[:-1]
    if not raw.strip():
        raise InvalidInput(f"{source} gave no text to remember (empty or only whitespace)")
    return raw


UserOpt = typer.Option(..., "--user", "-u", help="the user whose memories these are")
JsonOpt = typer.Option(False, "--json", help="print JSON (for scripts) instead of a table")


# ---------------------------------------------------------------------- commands
@app.command()
def add(
    text: Optional[str] = typer.Argument(None, help="what to remember; - reads it from stdin"),
    user: str = UserOpt,
    chat: str = typer.Option("default", "--chat", "-c", help="conversation id"),
    who: Optional[str] = typer.Option(None, "--who", help="who said or did it (default: the user)"),
    meta: Optional[List[str]] = typer.Option(None, "--meta", "-m", help="extra metadata key=value (repeatable)"),
    semantic: bool = typer.Option(False, "--semantic", help="store as a semantic fact instead of an episode"),
    procedural: bool = typer.Option(False, "--procedural", help="store as a procedure (a tool-call sequence that worked)"),
    infer: bool = typer.Option(False, "--infer", help="let the write decider (LLM or offline rules) decide what to keep"),
    ts: Optional[int] = typer.Option(None, "--ts", help="when it happened, epoch seconds (default: now)"),
    file: Optional[Path] = typer.Option(None, "--file", help="read the text from this UTF-8 file instead"),
    as_json: bool = JsonOpt,
) -> None:
    """Remember one piece of text: the argument, `-` for stdin, or --file PATH (for a text too long
    for a command line)."""
    text = read_text(text, file)
    with open_memory() as memory:
        result = memory.add(
            text, user_id=user, chat_id=chat, who=who, metadata=parse_meta(meta), infer=infer, ts=ts,
            memory_type="procedural" if procedural else "semantic" if semantic else "episodic",
        )
    shown = f"stored as {', '.join(map(str, result.ids))}" if result.stored else f"not stored: {result.reason}"
    emit(as_json, result.model_dump(mode="json"), message=shown)


@app.command()
def search(
    query: str = typer.Argument(..., help="what to recall"),
    user: str = UserOpt,
    limit: Optional[int] = typer.Option(None, "--limit", "-k", help="how many memories to show, both kinds ranked together "
                                        "(default: k_episodic + k_semantic; with --json: at most this many of each kind)"),
    memory_type: Optional[str] = typer.Option(None, "--type", "-t", help="episodic, semantic or procedural (default: episodic and semantic)"),
    mode: Optional[str] = typer.Option(None, "--mode", help="hybrid, dense or bm25 (default: settings)"),
    where: Optional[List[str]] = typer.Option(None, "--filter", "-f", help="metadata key=value that must match (repeatable)"),
    include_superseded: bool = typer.Option(False, "--include-superseded", help="also facts that a newer one superseded"),
    graph: Optional[bool] = typer.Option(None, "--graph/--no-graph", help="the graph stage on or off for this search "
                                         "(default: the `graph` setting)"),
    as_json: bool = JsonOpt,
) -> None:
    """Recall the memories most related to a question."""
    with open_memory() as memory:
        result = memory.search(query, user_id=user, limit=limit, memory_type=memory_type, filters=parse_meta(where, "--filter") or None, mode=mode,
                               include_superseded=include_superseded, graph=graph)
    emit(as_json, render.result_json(result), render.hits_table(result, title=f"recalled for {query!r}", rows=limit),
         None if len(result) else "nothing recalled")


@app.command()
def get(
    memory_id: int = typer.Argument(..., help="memory id"),
    user: str = UserOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show one memory with all its fields."""
    with open_memory() as memory:
        record = memory.get(memory_id, user_id=user)
    emit(as_json, render.record_json(record), render.record_table(record))


@app.command("list")
def list_(
    user: str = UserOpt,
    memory_type: Optional[str] = typer.Option(None, "--type", "-t", help="episodic, semantic or procedural "
                                              "(default: all three kinds)"),
    as_json: bool = JsonOpt,
) -> None:
    """Every memory of a user, oldest event first (paged through the store, never capped)."""
    with open_memory() as memory:
        records = memory.get_all(user, memory_type=memory_type)
    emit(as_json, [render.record_json(r) for r in records], render.records_table(records, title=f"{len(records)} memories of {user}"))


@app.command()
def update(
    memory_id: int = typer.Argument(..., help="memory id"),
    text: str = typer.Argument(..., help="the new text"),
    user: str = UserOpt,
    meta: Optional[List[str]] = typer.Option(None, "--meta", "-m", help="metadata key=value to set (repeatable)"),
    as_json: bool = JsonOpt,
) -> None:
    """Replace a memory's text (re-embedded; the id stays, the old text goes to history)."""
    with open_memory() as memory:
        record = memory.update(memory_id, text, user_id=user, metadata=parse_meta(meta) or None)
    emit(as_json, render.record_json(record), message=f"updated {record.id}")


@app.command()
def delete(
    memory_id: int = typer.Argument(..., help="memory id"),
    user: str = UserOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete one memory (its history is kept)."""
    with open_memory() as memory:
        memory.delete(memory_id, user_id=user)
    emit(as_json, {"deleted": memory_id}, message=f"deleted {memory_id}")


@app.command()
def reset(
    user: str = UserOpt,
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
    as_json: bool = JsonOpt,
) -> None:
    """Erase every memory of a user and its history, for good."""
    if not yes:
        typer.confirm(f"Erase every memory of {user!r} and its history?", abort=True)
    with open_memory() as memory:
        count = memory.reset(user)
    emit(as_json, {"user_id": user, "deleted": count}, message=f"erased {count} memories of {user}")


@app.command()
def history(
    memory_id: int = typer.Argument(..., help="memory id"),
    user: str = UserOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every change to a memory: created, updated, deleted, merged, separated, reconsolidated."""
    with open_memory() as memory:
        events = memory.history(memory_id, user_id=user)
    emit(as_json, [e.model_dump(mode="json") for e in events], render.history_table(events, memory_id))


@app.command()
def stats(
    user: Optional[str] = typer.Option(None, "--user", "-u", help="count only this user's memories"),
    as_json: bool = JsonOpt,
) -> None:
    """How many memories the store holds, by kind."""
    with open_memory() as memory:
        numbers = memory.stats(user)
    emit(as_json, numbers, render.stats_table(numbers))
    if not as_json and "service" in numbers:
        render.console().print(render.endpoints_table(numbers["service"]))


def main() -> None:
    """Entry point of the `hippocampus` script."""
    try:
        app()
    except HippocampusError as exc:  # raised outside a command (e.g. while a module registers)
        report(exc)
        sys.exit(exit_code(exc))


# --- command modules registered here ---
# Each module does `from .app import app` and decorates `@app.command()`; add one import per module.
from . import demo as _demo  # noqa: E402,F401
from . import consolidate as _consolidate  # noqa: E402,F401
from . import serve as _serve  # noqa: E402,F401
from . import mcp_cmd as _mcp_cmd  # noqa: E402,F401
from . import lifecycle as _lifecycle  # noqa: E402,F401
from . import transfer as _transfer  # noqa: E402,F401
from . import graph as _graph  # noqa: E402,F401
from . import models as _models  # noqa: E402,F401
from . import keys as _keys  # noqa: E402,F401
from . import service as _service  # noqa: E402,F401
