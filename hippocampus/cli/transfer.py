"""`hippocampus export` and `import`: MEMORY.md (to read and edit) and JSONL (a backup that
moves every field and the history between stores). With `--server` they go through the service: the
files stay on this machine (the Client sends and receives their text)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import InvalidInput
from . import render
from .base import JsonOpt, UserOpt, app, emit, open_memory

FORMATS = ("md", "jsonl")
FormatOpt = typer.Option("md", "--format", "-f", help="md (MEMORY.md, to read and edit) or jsonl (a full backup)")


def _format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise InvalidInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


@app.command()
def export(
    user: str = UserOpt,
    fmt: str = FormatOpt,
    out: Path | None = typer.Option(None, "--out", "-o", help="file to write (md: the old one is kept as .bak); "
                                       "md goes to stdout without it, jsonl needs it"),
    as_json: bool = JsonOpt,
) -> None:
    """Write a user's memories as MEMORY.md or JSONL. With --json: {user_id, format, count, path, text}
    (text: the MEMORY.md itself when there is no --out)."""
    fmt = _format(fmt)
    if fmt == "jsonl" and out is None:
        raise InvalidInput("--format jsonl needs --out PATH")
    text: str | None = None
    with open_memory() as memory:
        if fmt == "md":
            text = memory.export_md(user, out)
            count = text.count("\n### ")
        else:
            assert out is not None
            count = memory.export_jsonl(user, out)
    if as_json:
        emit(True, {"user_id": user, "format": fmt, "count": count, "path": str(out) if out else None,
                    "text": text if out is None else None})
    elif out is None:
        typer.echo(text)
    else:
        render.err_console().print(f"exported {count} memories of {user} to {out}", highlight=False, markup=False)


@app.command("import")
def import_(
    path: Path = typer.Argument(..., help="the MEMORY.md or JSONL file"),
    user: str = UserOpt,
    fmt: str = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Bring a MEMORY.md back (updates by id, [new] entries created; removed entries stay in the
    store) or restore a JSONL backup (new ids, every field and the history) as this user's memories."""
    fmt = _format(fmt)
    if not path.is_file():
        raise InvalidInput(f"no such file: {str(path)!r}")
    with open_memory() as memory:
        report = memory.import_md(user, path) if fmt == "md" else memory.import_jsonl(user, path)
    summary = (f"{len(report.updated)} updated, {len(report.created)} created, {len(report.unchanged)} unchanged, "
               f"{report.skipped} skipped")
    emit(as_json, report.model_dump(mode="json"), message="\n".join([summary, *(f"warning: {w}" for w in report.warnings)]))
