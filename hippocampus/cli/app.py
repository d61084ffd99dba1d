"""The `hippocampus` command line: add, search, get, list, update, delete, reset, history, stats, demo,
consolidate, schedule, serve, mcp, the lifecycle's decay, context, curate, restore, and export / import
(MEMORY.md, JSONL).

Every command prints a rich table for people and, with `--json`, plain JSON for scripts. The store
comes from the global options `--uri` / `--collection`, otherwise from MemoryConfig (keyword >
HIPPOCAMPUS_* environment > hippocampus.yaml > defaults). With `--server URL` (or HIPPOCAMPUS_SERVER)
every command goes through a running service instead (a Client has Memory's verbs), so a cron
line can consolidate while the agent's service holds the store. Errors of the library print one line on
stderr and exit with 2 for the caller's mistakes (InvalidInput, ConfigError) and 1 otherwise
(NotFound, StoreError, EmbeddingError, LLMError); no traceback.

The shared parts (the typer app, error report, store opening, --json) are in base.py; every command
module imports them from there and is registered by one import at the bottom of this file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from ..contract.requests import AddRequest, ListRequest, SearchRequest, UpdateRequest
from ..contract.verbs import by_name
from ..errors import HippocampusError
from . import render
from .base import (
    AgentOpt,
    AgentScopeOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    WideOpt,
    app,
    check_expiry,
    emit,
    exit_code,
    open_memory,
    parse_filters,
    parse_meta,
    read_text,
    report,
)
from .fields import model_options


# ---------------------------------------------------------------------- commands
@app.command()
@model_options(AddRequest, by_name()["add"].cli, handled=("messages", "user_id", "chat_id", "who", "metadata", "memory_type", "infer", "ts",
                                    "expires_at", "agent_id", "run_id"))  # the rest of AddRequest: cli/fields.py
def add(
    text: str | None = typer.Argument(None, help="what to remember; - reads it from stdin"),
    user: str = UserOpt,
    chat: str = typer.Option("default", "--chat", "-c", help="conversation id"),
    who: str | None = typer.Option(None, "--who", help="who said or did it (default: the user)"),
    meta: list[str] | None = typer.Option(None, "--meta", "-m", help="extra metadata key=value (repeatable)"),
    semantic: bool = typer.Option(False, "--semantic", help="store as a semantic fact instead of an episode"),
    procedural: bool = typer.Option(False, "--procedural", help="store as a procedure (a tool-call sequence that worked)"),
    infer: bool = typer.Option(False, "--infer", help="let the write decider (LLM or offline rules) decide what to keep"),
    ts: int | None = typer.Option(None, "--ts", help="when it happened, epoch seconds (default: now)"),
    file: Path | None = typer.Option(None, "--file", help="read the text from this UTF-8 file instead"),
    expires_at: str | None = typer.Option(None, "--expires-at", help="when it expires: ISO date or datetime, epoch "
                                             "seconds, or words ('until Monday', '到下周一')"),
    agent: str | None = AgentOpt,
    run: str | None = RunOpt,
    as_json: bool = JsonOpt,
    fields: dict[str, Any] | None = None,
) -> None:
    """Remember one piece of text.

    The text is the argument, `-` to read it from stdin, or --file PATH (for a text too long for a
    command line)."""
    text = read_text(text, file)
    check_expiry(expires_at, ts)
    with open_memory() as memory:
        result = memory.add(
            text, user_id=user, chat_id=chat, who=who, metadata=parse_meta(meta), infer=infer, ts=ts,
            memory_type="procedural" if procedural else "semantic" if semantic else "episodic", expires_at=expires_at,
            agent_id=agent, run_id=run, **(fields or {}),
        )
    shown = f"stored as {', '.join(map(str, result.ids))}" if result.stored else f"not stored: {result.reason}"
    emit(as_json, result.model_dump(mode="json"), message=shown)


@app.command()
@model_options(SearchRequest, by_name()["search"].cli, handled=(
    "query", "user_id", "limit", "memory_type", "mode", "filters", "include_superseded", "include_expired", "graph", "agent_id",
    "agent_scope", "run_id", "as_of"))  # the rest of SearchRequest (memory_types is skipped: contract/verbs.py)
def search(
    query: str = typer.Argument(..., help="what to recall"),
    user: str = UserOpt,
    limit: int | None = typer.Option(None, "--limit", "-k", help="how many memories to show, both kinds ranked together "
                                        "(default: k_episodic + k_semantic; with --json: at most this many of each kind)"),
    memory_type: str | None = typer.Option(None, "--type", "-t", help="episodic, semantic or procedural (default: episodic and semantic)"),
    mode: str | None = typer.Option(None, "--mode", help="hybrid, dense or bm25 (default: settings)"),
    where: list[str] | None = typer.Option(None, "--filter", "-f", help="key=value that must match, or a JSON filter "
                                              "such as '{\"priority\": {\"gte\": 3}}' (repeatable, all must hold; docs/filters.md)"),
    include_superseded: bool = typer.Option(False, "--include-superseded", help="also facts that a newer one superseded"),
    include_expired: bool = typer.Option(False, "--include-expired", help="also memories past their expires_at"),
    graph: bool | None = typer.Option(None, "--graph/--no-graph", help="the graph stage on or off for this search "
                                         "(default: the `graph` setting)"),
    agent: str | None = AgentOpt,
    agent_scope: str = AgentScopeOpt,
    run: str | None = RunOpt,
    as_of: str | None = typer.Option(None, "--as-of", help="answer as the memories stood then: an ISO 8601 date or time, "
                                     "or epoch seconds (docs/slots.md)"),
    as_json: bool = JsonOpt,
    wide: bool = WideOpt,
    fields: dict[str, Any] | None = None,
) -> None:
    """Recall the memories most related to a question."""
    with open_memory() as memory:
        result = memory.search(query, user_id=user, limit=limit, memory_type=memory_type, filters=parse_filters(where), mode=mode,
                               include_superseded=include_superseded, graph=graph, include_expired=include_expired,
                               agent_id=agent, agent_scope=agent_scope, run_id=run, as_of=as_of, **(fields or {}))
    emit(as_json, render.result_json(result), render.hits_table(result, title=f"recalled for {query!r}", rows=limit, wide=wide),
         None if len(result) else "nothing recalled", wide=wide)


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
@model_options(ListRequest, by_name()["get_all"].cli, handled=(
    "user_id", "memory_type", "filters", "include_expired", "agent_id", "agent_scope", "run_id"))  # the rest: cli/fields.py
def list_(
    user: str = UserOpt,
    memory_type: str | None = typer.Option(None, "--type", "-t", help="episodic, semantic or procedural "
                                              "(default: all three kinds)"),
    filters: list[str] | None = typer.Option(None, "--filter", "-f", help="key=value that must match, or a JSON filter "
                                                "(repeatable, all must hold; docs/filters.md)"),
    include_expired: bool = typer.Option(False, "--include-expired", help="also memories past their expires_at"),
    agent: str | None = AgentOpt,
    agent_scope: str = AgentScopeOpt,
    run: str | None = RunOpt,
    as_json: bool = JsonOpt,
    wide: bool = WideOpt,
    fields: dict[str, Any] | None = None,
) -> None:
    """Every memory of a user, oldest event first (paged through the store, never capped)."""
    with open_memory() as memory:
        records = memory.get_all(user, memory_type=memory_type, filters=parse_filters(filters), include_expired=include_expired,
                                 agent_id=agent, agent_scope=agent_scope, run_id=run, **(fields or {}))
    emit(as_json, [render.record_json(r) for r in records], render.records_table(records, title=f"{render.plural(len(records), 'memory', 'memories')} of {user}", wide=wide),
         wide=wide)


@app.command()
@model_options(UpdateRequest, by_name()["update"].cli, handled=("memory_id", "text", "user_id", "metadata", "expires_at"))
def update(
    memory_id: int = typer.Argument(..., help="memory id"),
    text: str = typer.Argument(..., help="the new text"),
    user: str = UserOpt,
    meta: list[str] | None = typer.Option(None, "--meta", "-m", help="metadata key=value to set (repeatable)"),
    expires_at: str | None = typer.Option(None, "--expires-at", help="when it expires, as add's --expires-at "
                                             "(words count from now)"),
    as_json: bool = JsonOpt,
    fields: dict[str, Any] | None = None,
) -> None:
    """Replace a memory's text (re-embedded; the id stays, the old text goes to history)."""
    check_expiry(expires_at)
    with open_memory() as memory:
        record = memory.update(memory_id, text, user_id=user, metadata=parse_meta(meta) or None, expires_at=expires_at,
                               **(fields or {}))
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
    emit(as_json, {"user_id": user, "deleted": count}, message=f"erased {render.plural(count, 'memory', 'memories')} of {user}")


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
    user: str | None = typer.Option(None, "--user", "-u", help="count only this user's memories"),
    as_json: bool = JsonOpt,
) -> None:
    """How many memories the store holds, by kind."""
    with open_memory() as memory:
        numbers = memory.stats(user)
    emit(as_json, numbers, render.stats_table(numbers))
    if not as_json and "service" in numbers:
        render.console().print(render.endpoints_table(numbers["service"]))


def main() -> None:
    """Entry point of the `hippocampus` script (and `python -m hippocampus`). A command imports what it
    uses when it runs: the store client (pymilvus) only on the paths that open a store (base.open_memory)."""
    try:
        app()
    except HippocampusError as exc:  # raised outside a command (e.g. while a module registers)
        report(exc)
        sys.exit(exit_code(exc))


# --- command modules registered here ---
# Each module does `from .base import app` and decorates `@app.command()`; add one import per module.
from . import batch as _batch  # noqa: E402,F401
from . import consolidate as _consolidate  # noqa: E402,F401
from . import demo as _demo  # noqa: E402,F401
from . import graph as _graph  # noqa: E402,F401
from . import keys as _keys  # noqa: E402,F401
from . import lifecycle as _lifecycle  # noqa: E402,F401
from . import mcp_cmd as _mcp_cmd  # noqa: E402,F401
from . import models as _models  # noqa: E402,F401
from . import serve as _serve  # noqa: E402,F401
from . import service as _service  # noqa: E402,F401
from . import transfer as _transfer  # noqa: E402,F401
