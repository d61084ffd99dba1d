"""`hippocampus keys new`: a fresh API key, and the line that puts it in a keys file.

The key is `secrets.token_urlsafe(32)` (256 random bits, far above the 128 the service requires);
the keys-file line holds only its sha256, so the file is no secret. The key is shown once: give it to
the client (`HIPPOCAMPUS_API_KEY`, `Client(api_key=...)`) and keep the line in `--keys-file`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any

import typer

from ..errors import InvalidInput
from ..validation import check_id
from .base import JsonOpt, _App, app

keys_app = _App(name="keys", help="API keys for `serve`: make a strong one and its keys-file line.",
                no_args_is_help=True, rich_markup_mode=None)
app.add_typer(keys_app, name="keys")


def new_entry(users: str | None, operator: bool, name: str | None) -> tuple[str, dict[str, Any]]:
    """A new key and its keys-file entry (name, sha256, users); InvalidInput for a bad choice of users."""
    if operator == bool(users):
        raise InvalidInput("give exactly one of --users alice,bob (a key for those users) or --operator (every user)")
    entry: dict[str, Any] = {}
    if name is not None:
        entry["name"] = check_id("--name", name)
    key = secrets.token_urlsafe(32)
    entry["sha256"] = hashlib.sha256(key.encode("utf-8")).hexdigest()
    if operator:
        entry["users"] = "*"
    else:
        ids = [check_id("--users", u.strip()) for u in (users or "").split(",") if u.strip()]
        if not ids or "*" in ids:
            raise InvalidInput("--users takes user ids separated by commas (for every user, use --operator)")
        entry["users"] = sorted(set(ids))
    return key, entry


@keys_app.command("new")
def new(
    users: str | None = typer.Option(None, "--users", help="the user ids this key may touch, comma-separated"),
    operator: bool = typer.Option(False, "--operator", help="an operator key: every user, /metrics, the service's figures"),
    name: str | None = typer.Option(None, "--name", help="the name logs and metrics show instead of the key"),
    json_out: bool = JsonOpt,
) -> None:
    """Print a new key (shown once; nothing stores it) and its keys-file line (its sha256 only).

    The line is one item of the file's `keys:` list (YAML; the flow mapping is also JSON)."""
    key, entry = new_entry(users, operator, name)
    line = "  - " + json.dumps(entry, ensure_ascii=False)
    if json_out:
        typer.echo(json.dumps({"key": key, "entry": entry, "line": line}, ensure_ascii=False))
        return
    typer.echo("# the key: give it to the client (HIPPOCAMPUS_API_KEY, or Authorization: Bearer <key>); it is shown only once")
    typer.echo(key)
    typer.echo("# its line under `keys:` in the keys file (serve --keys-file); the file holds only the sha256")
    typer.echo(line)
