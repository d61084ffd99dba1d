"""What every command of the `hippocampus` command line shares: the typer `app` with its global
options (`--uri`, `--collection`, `--server`, `--version`), the one-line error report and exit codes,
opening a store (or a Client with --server), `--json` output, and the common options.

Command modules (app.py's core verbs, demo, consolidate, serve, ...) import from here and decorate
`@app.command()`; app.py imports each of them once, so that nothing imports app.py back.
"""


from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from ..contract.defaults import ENV_SERVER, SERVICE_START_WAIT_S
from ..errors import ConfigError, HippocampusError, InvalidInput, StoreLockedError
from . import render

if TYPE_CHECKING:  # imported by the commands that open a store: `--help` starts without them
    from ..memory import Memory
    from ..remote import Client

F = TypeVar("F", bound=Callable[..., Any])
USER_EXIT = 2  # the caller's mistake: bad input or settings
FAIL_EXIT = 1  # the operation failed: not found, store, embedder, LLM


def exit_code(exc: HippocampusError) -> int:
    return USER_EXIT if isinstance(exc, (InvalidInput, ConfigError)) else FAIL_EXIT


def report(exc: HippocampusError) -> None:
    """The error as one line on stderr; a store held by a recorded service names the service."""
    from .registry import locked_hint

    line = locked_hint(exc)
    if line is None and type(exc).__name__ == "AuthError" and _SERVER["url"]:  # the CLI's key is an environment variable
        line = f"{render.error_line(exc)}; the CLI sends the key in HIPPOCAMPUS_API_KEY: export HIPPOCAMPUS_API_KEY=<key>"
    render.err_console().print(render.error(exc, line))


def friendly_errors(fn: F) -> F:
    """Turn the library's errors into one line on stderr and an exit code, for every command."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from .store_path import discard_fresh_store, forget_fresh_store

        forget_fresh_store()
        try:
            return fn(*args, **kwargs)
        except HippocampusError as exc:
            report(exc)
            if exit_code(exc) == USER_EXIT:  # refused before writing: no new store left behind
                discard_fresh_store()
            raise typer.Exit(code=exit_code(exc)) from None
        finally:
            forget_fresh_store()

    return wrapper  # type: ignore[return-value]


_RUNNING: dict[str, str | None] = {"command": None}  # the command being run (store_path.py's rule reads it)


def running_as(name: str, fn: F) -> F:
    """`fn`, recording `name` as the running command while it runs."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        before, _RUNNING["command"] = _RUNNING["command"], name
        try:
            return fn(*args, **kwargs)
        finally:
            _RUNNING["command"] = before

    return wrapper  # type: ignore[return-value]


class _App(typer.Typer):
    """A Typer whose commands all report library errors as one line (see `friendly_errors`)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(fn: F) -> F:
            register(friendly_errors(running_as(args[0] if args and isinstance(args[0], str) else kwargs.get("name") or fn.__name__, fn)))
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
_SERVER: dict[str, str | None] = {"url": None}


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        typer.echo(f"hippocampus {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    uri: str | None = typer.Option(
        None, "--uri", help="store: a milvus-lite path ending in .db or http://host:19530 (default: settings)"
    ),
    collection: str | None = typer.Option(None, "--collection", help="collection name (default: settings, 'memories')"),
    create: bool = typer.Option(
        False, "--create", help="make a new store at --uri, its directory too (otherwise a new store is made only in the "
        "default home, or by add/import in a directory holding no store yet)"
    ),
    server: str | None = typer.Option(
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
        from ..remote import Client

        return Client(_SERVER["url"])
    if not overrides:  # a service on this machine holds the store: through it (the store is locked to others)
        client = through_recorded_service()
        if client is not None:
            return client
    from ..memory import Memory
    from .store_path import check_store_path

    settings = {**store_overrides(), **overrides}
    command = _RUNNING["command"]
    if command is not None:  # a typo'd --uri is one line, never a new, empty store (store_path.py)
        check_store_path(settings, command)
    try:
        return Memory(**settings)
    except StoreLockedError:  # a service took the store since it was looked for (it starts as this one opens)
        client = through_recorded_service() if not overrides else None
        if client is None:
            raise
        return client


def through_recorded_service() -> Client | None:
    """A Client to the service `hippocampus serve` recorded as holding the store the options name
    (cli/service.py), said in one line on stderr; None when there is none. One recorded as starting is
    waited for (up to SERVICE_START_WAIT_S): a restarted service is used, never raced for the store."""
    from .registry import recorded_service, services_dir

    if not services_dir().is_dir():  # the usual case: no service was ever recorded here, no settings read
        return None
    store = _named_store()
    if store is None:
        return None
    record = recorded_service(store, _STORE["collection_name"], SERVICE_START_WAIT_S, _note_waiting)
    if record is None:
        return None
    from ..remote import Client

    typer.echo(f"note: through the service at {record.url} (pid {record.pid}), which holds this store", err=True)
    return Client(record.url)


def _note_waiting(record: Any) -> None:
    typer.echo(f"note: waiting for the service starting at {record.url} (pid {record.pid}) for this store", err=True)


def _named_store() -> str | None:
    """The store_key of the store the options name; None when the settings do not validate (opening the
    store then says what is wrong). `--uri` wins over every other source of settings and is only stripped
    by MemoryConfig, so it is taken as given, without loading the settings (config.py, pydantic-settings,
    YAML: a noticeable share of a command that then goes through the service); a --uri no service could hold
    (not a store's name) matches no record either way."""
    from .registry import store_key

    if _STORE["milvus_uri"] is not None and _STORE["milvus_uri"].strip():
        return store_key(_STORE["milvus_uri"].strip())
    from ..config import MemoryConfig

    try:
        return store_key(MemoryConfig(**{**store_overrides(), "create_store_dir": True}).milvus_uri)
    except ValueError:
        return None


def parse_meta(pairs: list[str] | None, option: str = "--meta") -> dict[str, Any]:
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


def parse_filters(items: list[str] | None, option: str = "--filter") -> dict[str, Any] | None:
    """`--filter` values: `key=value` pairs (exact matches, as before) and JSON objects in search's
    syntax (`--filter '{"priority": {"gte": 3}}'`, docs/filters.md), all of them ANDed; None for none."""
    pairs = parse_meta([i for i in items or [] if not i.lstrip().startswith("{")], option)
    objects: list[Any] = []
    for item in items or []:
        if item.lstrip().startswith("{"):
            try:
                objects.append(json.loads(item))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{option} takes key=value or a JSON object; {exc.msg} at character {exc.pos}") from None
    parts = ([pairs] if pairs else []) + objects
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"AND": parts}


def emit(as_json: bool, payload: Any, table: Any = None, message: str | None = None, wide: bool = False) -> None:
    """JSON on stdout for scripts, or a table / message for people (`wide`: never wrapped nor cut)."""
    if as_json:
        typer.echo(render.dumps(payload))
        return
    console = render.console(wide=wide)
    if table is not None:
        console.print(table)
    if message:
        console.print(render.literal(message))


def read_file(file: Path) -> str:
    """The UTF-8 text of --file (stdin for `-`); InvalidInput, one line, when it cannot be read."""
    if str(file) == "-":
        return sys.stdin.read()
    try:
        return file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {str(file)!r}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"--file {str(file)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read --file {str(file)!r}: {exc.strerror}") from None


def read_text(text: str | None, file: Path | None) -> str:
    """The text of `add`: the argument, stdin for `-`, or a file; InvalidInput when none, both, or empty.
    One trailing line break (what `echo` and editors add) is dropped."""
    if (text is None) == (file is None):
        raise InvalidInput("give the text to remember: as an argument, - to read stdin, or --file PATH (one of them)")
    if file is not None:
        raw, source = read_file(file), f"--file {str(file)!r}"
    elif text == "-":
        raw, source = sys.stdin.read(), "stdin"
    else:
        return text
    if raw.endswith("\n"):
        raw = raw[:-2] if raw.endswith("\r\n") else raw[:-1]
    if not raw.strip():
        raise InvalidInput(f"{source} gave no text to remember (empty or only whitespace)")
    return raw


PAST_SLACK_S = 14 * 3600  # the widest time-zone offset: a date that is past in every zone is surely past


def check_expiry(expires_at: str | None, ts: int | None = None) -> None:
    """Refuse (InvalidInput, one line) an --expires-at already past: the memory would be hidden at once
    (search, list and context leave expired memories out) and nothing would say so."""
    if expires_at is None:
        return
    import time
    from datetime import datetime, timezone

    from ..lifecycle import expiry

    now = int(time.time())
    until = expiry.resolve(expires_at, ts if ts is not None else now, timezone.utc)
    if until is not None and until < now - PAST_SLACK_S:
        shown = datetime.fromtimestamp(until, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        raise InvalidInput(f"--expires-at {expires_at!r} is already past ({shown}): the memory would be hidden at once "
                           "(expired memories are left out of search and list); give a later time")


UserOpt = typer.Option(..., "--user", "-u", help="the user whose memories these are")
JsonOpt = typer.Option(False, "--json", help="print JSON (for scripts) instead of a table")
WideOpt = typer.Option(False, "--wide", help="every column and the whole text, one line a row, whatever the terminal's width")
AgentOpt = typer.Option(None, "--agent", help="the agent acting: its own memories within the user (docs/agents.md)")
AgentScopeOpt = typer.Option("both", "--agent-scope", help="with --agent: own, shared (the user's without agent) or both")
RunOpt = typer.Option(None, "--run", help="the run: recorded on add, kept to one run on reads")


