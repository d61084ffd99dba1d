"""`update-many` and `delete-many`: the batch verbs from a shell (memory/batch.py states their semantics).

update-many reads JSONL (one {"memory_id", "text", "metadata"?} per line) from --file, `-` for stdin;
delete-many takes ids as arguments and/or from --file (ids separated by spaces, commas or lines).
Both print a result per item and exit 0 when every item ended ok or unchanged, 1 otherwise (2 when
the call is refused: a malformed item or more than 1,000; then nothing changed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ..errors import InvalidInput
from . import render
from .base import FAIL_EXIT, JsonOpt, UserOpt, app, emit, open_memory, read_file


def jsonl_items(text: str) -> list[Any]:
    """One JSON value per non-blank line. Raises InvalidInput naming the first line that is not JSON."""
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"--file line {n}: not JSON ({exc.msg}); nothing was changed") from None
    return items


def _show(as_json: bool, result: Any, verb: str) -> None:
    """Every item's result (JSON or a table), then exit 1 unless each ended ok or unchanged."""
    table = Table(title=f"{verb}: " + ", ".join(f"{n} {s}" for s, n in result.counts.items()) if result.results else None)
    for column in ("id", "status", "error"):
        table.add_column(column)
    for item in result.results:
        table.add_row(str(item.id), item.status, render.literal(item.error or ""))
    emit(as_json, result.model_dump(mode="json"), table if result.results else None, None if result.results else "nothing to do")
    if any(item.status not in ("ok", "unchanged") for item in result.results):
        raise typer.Exit(code=FAIL_EXIT)


@app.command("update-many")
def update_many(
    file: Path = typer.Option(..., "--file", help='JSONL, one {"memory_id": 7, "text": "...", "metadata": {...}} per line '
                              "(at most 1,000); - reads stdin"),
    user: str = UserOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Update many memories at once, a result per item (history kept per item, as `update`).

    A malformed line refuses the whole call and nothing changes."""
    items = jsonl_items(read_file(file))
    with open_memory() as memory:
        result = memory.update_many(items, user_id=user)
    _show(as_json, result, "update-many")


@app.command("delete-many")
def delete_many(
    memory_ids: list[str] | None = typer.Argument(None, help="memory ids (at most 1,000 in all)"),
    user: str = UserOpt,
    file: Path | None = typer.Option(None, "--file", help="read ids from this file too (spaces, commas or lines); - reads stdin"),
    as_json: bool = JsonOpt,
) -> None:
    """Delete many memories at once, a result per id (history kept, as `delete`); core memories are skipped."""
    ids: list[str] = list(memory_ids or [])
    if file is not None:
        ids += [p for p in read_file(file).replace(",", " ").replace(";", " ").split() if p]
    if not ids:
        raise InvalidInput("give the ids to delete: as arguments or --file PATH")
    with open_memory() as memory:
        result = memory.delete_many(ids, user_id=user)
    _show(as_json, result, "delete-many")
