"""`hippocampus export` and `import`: MEMORY.md (to read and edit) and JSONL (a backup that
moves every field and the history between stores). They run on the store directly, not through a service."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from ..errors import ConfigError, InvalidInput
from . import render
from .app import JsonOpt, UserOpt, app, emit, open_memory

if TYPE_CHECKING:
    from ..memory import Memory

FORMATS = ("md", "jsonl")
FormatOpt = typer.Option("md", "--format", "-f", help="md (MEMORY.md, to read and edit) or jsonl (a full backup)")


def _direct(memory: Any) -> "Memory":
    """The store itself: a Client (--server) has no export or import."""
    from ..memory import Memory

    if not isinstance(memory, Memory):
        raise ConfigError("export/import run on the store directly; drop --server and use --uri/--collection "
                          "(stop the service first if it holds a milvus-lite file)")
    return memory


def _format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise InvalidInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


@app.command()
def export(
    user: str = UserOpt,
    fmt: str = FormatOpt,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="file to write (md: the old one is kept as .bak); "
                                       "md goes to stdout without it, jsonl needs it"),
) -> None:
    """Write a user's memories as MEMORY.md or JSONL."""
    fmt = _format(fmt)
    if fmt == "jsonl" and out is None:
        raise InvalidInput("--format jsonl needs --out PATH")
    with open_memory() as opened:
        memory = _direct(opened)
        if fmt == "md":
            text = memory.export_md(user, out)
            if out is None:
                typer.echo(text)
                return
            count = text.count("\n### ")
        else:
            assert out is not None
            count = memory.export_jsonl(user, out)
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
    with open_memory() as opened:
        memory = _direct(opened)
        report = memory.import_md(user, path) if fmt == "md" else memory.import_jsonl(user, path)
    summary = (f"{len(report.updated)} updated, {len(report.created)} created, {len(report.unchanged)} unchanged, "
               f"{report.skipped} skipped")
    emit(as_json, report.model_dump(mode="json"), message="\n".join([summary, *(f"warning: {w}" for w in report.warnings)]))
