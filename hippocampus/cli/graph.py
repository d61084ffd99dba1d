"""`hippocampus graph`: a user's entities and triples (graph/, store/graph.py), optionally built first."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from . import render
from .base import JsonOpt, UserOpt, app, emit, open_memory


def graph_tables(view: Any) -> tuple[Table, Table]:
    entities = Table(title=render.literal(f"entities of {view.user_id} ({len(view.entities)})"))
    for column in ("entity", "type", "memories", "last seen"):
        entities.add_column(column)
    for e in view.entities:
        entities.add_row(render.literal(render.short(e.name, 40)), render.literal(e.type), str(len(e.memory_ids)), render.when(e.last_seen))
    triples = Table(title=render.literal(f"triples of {view.user_id} ({len(view.triples)})"))
    for column in ("subject", "predicate", "object", "memories"):
        triples.add_column(column)
    for t in view.triples:
        predicate = ("not " if t.negated else "") + t.predicate + (f" ({t.frequency})" if t.frequency else "")
        obj = t.object + (f" if {t.condition}" if t.condition else "")
        triples.add_row(render.literal(render.short(t.subject, 30)), render.literal(render.short(predicate, 30)),
                        render.literal(render.short(obj, 40)),
                        ",".join(str(i) for i in t.memory_ids[:6]) + ("…" if len(t.memory_ids) > 6 else ""))
    return entities, triples


@app.command()
def graph(
    user: str = UserOpt,
    build: bool = typer.Option(False, "--build", help="first read the memories not read yet into the graph"),
    limit: int | None = typer.Option(50, "--limit", help="at most this many entities and triples (most supported first)"),
    as_json: bool = JsonOpt,
) -> None:
    """Print a user's graph: the entities their memories name and the triples they state, each with the
    memories that support it. With `graph: on` consolidation builds it; `--build` builds now."""
    with open_memory() as memory:  # a Memory, or a Client with --server
        built = memory.build_graph(user) if build else None
        view = memory.graph(user, limit=limit)
    if as_json:
        emit(True, {**view.model_dump(), **({"built": built.model_dump()} if built else {})})
        return
    if built is not None:
        typer.echo(f"read {built.memories_read} memories ({built.llm_calls} extractor calls, {built.errors} failed) "
                   f"in {built.seconds:.1f} s")
    if not view.memories_read:
        typer.echo(f"no graph for {user} yet: run `hippocampus graph -u {user} --build` or consolidate with graph: on")
        return
    entities, triples = graph_tables(view)
    emit(False, None, entities)
    emit(False, None, triples)
