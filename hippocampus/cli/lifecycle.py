"""`hippocampus decay`, `context`, `curate`, `restore` and `undo`: how memories age, from the command line
(docs/aging.md)."""

from __future__ import annotations

from typing import Any

import typer

from ..contract.requests import ContextRequest, CurateRequest
from ..contract.verbs import by_name
from . import render
from .base import AgentOpt, AgentScopeOpt, JsonOpt, RunOpt, UserOpt, app, emit, open_memory
from .consolidate import stats_table
from .fields import model_options


@app.command()
def decay(
    user: str | None = typer.Option(None, "--user", "-u", help="only this user's memories (default: everyone)"),
    now: int | None = typer.Option(None, "--now", help="decay as of this time, epoch seconds (simulations; default: now)"),
    as_json: bool = JsonOpt,
) -> None:
    """Archive memories whose score fell below 0.2 (or whose todo date passed) and forget those below
    0.05 (restorable from history); core and system memories never. Consolidation runs this too."""
    with open_memory() as memory:
        stats = memory.decay(user, now=now)
    emit(as_json, stats.model_dump(), stats_table(stats, title="decay"))


@app.command()
@model_options(ContextRequest, by_name()["context"].cli, handled=(
    "user_id", "query", "max_items", "min_score", "dates", "agent_id", "agent_scope", "run_id"))  # the rest: cli/fields.py
def context(
    user: str = UserOpt,
    query: str | None = typer.Option(None, "--query", "-q", help="also the memories most related to this"),
    max_items: int = typer.Option(20, "--max", help="at most this many memories"),
    min_score: float = typer.Option(0.5, "--min-score", help="only memories scoring at least this (core: any score)"),
    dates: bool = typer.Option(False, "--dates", help="start each line with the memory's date"),
    agent: str | None = AgentOpt,
    agent_scope: str = AgentScopeOpt,
    run: str | None = RunOpt,
    as_json: bool = JsonOpt,
    fields: dict[str, Any] | None = None,
) -> None:
    """Print the block an agent puts in its system prompt: core memories first, then by category."""
    with open_memory() as memory:
        block = memory.context(user, query=query, max_items=max_items, min_score=min_score, dates=dates, agent_id=agent,
                               agent_scope=agent_scope, run_id=run, **(fields or {}))
    if as_json:
        emit(True, {"user_id": user, "context": block})
    else:
        typer.echo(block or f"(nothing to inject for {user}: no active memory scores {min_score} or more)")


@app.command()
@model_options(CurateRequest, by_name()["curate"].cli, handled=("memory_id", "user_id", "category", "importance"))
def curate(
    memory_id: int = typer.Argument(..., help="memory id"),
    user: str = UserOpt,
    category: str | None = typer.Option(None, "--category", help="preference, fact, experience, workflow, decision, "
                                           "skill_usage, todo, core (never decays) or system"),
    importance: float | None = typer.Option(None, "--importance", help="the score in [0, 1], counted from now"),
    as_json: bool = JsonOpt,
    fields: dict[str, Any] | None = None,
) -> None:
    """Set a memory's category and/or importance (history records the change)."""
    with open_memory() as memory:
        record = memory.curate(memory_id, user, category=category, importance=importance, **(fields or {}))
    life = record.life
    emit(as_json, render.record_json(record),
         message=f"{record.id}: {life.category.value}, importance {life.importance:.2f}, {life.state.value}")


@app.command()
def restore(
    memory_id: int = typer.Argument(..., help="the id the memory had when decay forgot it"),
    user: str = UserOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Bring back a memory that decay forgot, from its history (under a new id)."""
    with open_memory() as memory:
        record = memory.restore(memory_id, user)
    emit(as_json, render.record_json(record), message=f"restored {memory_id} as {record.id}")


@app.command()
def undo(
    event_id: int = typer.Argument(..., help="the history event's id (`hippocampus history` lists them)"),
    user: str = UserOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Undo one history event: the state before it comes back (a merge undone brings both sources back)."""
    with open_memory() as memory:
        result = memory.undo(event_id, user)
    emit(as_json, result.model_dump(mode="json"), message=result.message)
