"""`hippocampus keys new`: a fresh API key, and the line that puts it in a keys file.

The key is `secrets.token_urlsafe(32)` (256 random bits, far above the 128 the service requires);
the keys-file line holds only its sha256, so the file is no secret. The key is shown once: give it to
the client (`HIPPOCAMPUS_API_KEY`, `Client(api_key=...)`) and keep the line in `--keys-file`.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
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


def added_to(path: Path, entry: dict[str, Any], line: str) -> str:
    """The keys file's text with `entry` added: the line appended to a YAML file (its comments kept), the
    entry to a JSON file's list; a new file holds it alone. ConfigError when the file does not load before
    or after (nothing is written then)."""
    from ..server.auth import KeyRing

    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old is not None:
        KeyRing.load(path, env={})  # a file that does not load now is not edited
    if path.suffix == ".json":
        data = json.loads(old) if old is not None else {"keys": []}
        data["keys"].append(entry)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if old is None or not old.strip():
        return "keys:\n" + line + "\n"
    return old + ("" if old.endswith("\n") else "\n") + line + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader (the service reloading on SIGHUP) sees the old file or the
    new one, never a part: a temporary file beside it (0600), synced, checked to load with every key,
    then renamed over it. Why: a file half written can still parse (a list cut after one entry), and the
    service took it, refusing the keys not yet written with 401 (issue 57)."""
    from ..server.auth import KeyRing

    path = path.expanduser()
    temp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        with os.fdopen(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        KeyRing.load(temp, env={})  # what the service will read: refused here, the old file stays
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


@keys_app.command("new")
def new(
    users: str | None = typer.Option(None, "--users", help="the user ids this key may touch, comma-separated"),
    operator: bool = typer.Option(False, "--operator", help="an operator key: every user, /metrics, the service's figures"),
    name: str | None = typer.Option(None, "--name", help="the name logs and metrics show instead of the key"),
    keys_file: Path | None = typer.Option(None, "--keys-file", help="also add the line to this keys file (made if absent; "
                                          "written atomically: a service reloading it never reads half)"),
    json_out: bool = JsonOpt,
) -> None:
    """Print a new key (shown once; nothing stores it) and its keys-file line (its sha256 only).

    The line is one item of the file's `keys:` list (YAML; the flow mapping is also JSON). With
    --keys-file it is added to that file too; `kill -HUP <pid>` then makes a running service read it."""
    key, entry = new_entry(users, operator, name)
    line = "  - " + json.dumps(entry, ensure_ascii=False)
    if keys_file is not None:
        write_atomically(keys_file, added_to(keys_file.expanduser(), entry, line))
    if json_out:
        typer.echo(json.dumps({"key": key, "entry": entry, "line": line}, ensure_ascii=False))
        return
    typer.echo("# the key: give it to the client (HIPPOCAMPUS_API_KEY, or Authorization: Bearer <key>); it is shown only once")
    typer.echo(key)
    typer.echo("# its line under `keys:` in the keys file (serve --keys-file); the file holds only the sha256")
    typer.echo(line)
