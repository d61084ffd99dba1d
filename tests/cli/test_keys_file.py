"""Keys files written whole (issue 57): a keys file half written can still parse (a list cut after one
entry) and a service reloading it on SIGHUP took it, refusing the keys not yet written with 401.
`hippocampus keys new --keys-file` writes a temporary file beside it, checks that it loads, and renames
it over the old one; the service's reload refuses a file that does not load and keeps its keys."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from hippocampus.cli.app import app
from hippocampus.errors import AuthError
from hippocampus.server.auth import KeyRing
from hippocampus.server.key_reload import reload_keys

runner = CliRunner()


def new_key(path: Path, user: str, code: int = 0) -> str | None:
    result = runner.invoke(app, ["keys", "new", "--users", user, "--keys-file", str(path), "--json"])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout)["key"] if code == 0 else None


@pytest.mark.parametrize("name", ["keys.yaml", "keys.json"])
def test_keys_new_adds_each_key_to_the_file_whole(tmp_path: Path, name: str, monkeypatch):
    path = tmp_path / name
    alice = new_key(path, "alice")
    if name.endswith(".yaml"):
        path.write_text("# our keys\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    seen: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(src, dst):  # at the rename: the new file is whole and loads; the old one is still in place
        seen.append((Path(dst).read_text(encoding="utf-8"), Path(src).read_text(encoding="utf-8")))
        KeyRing.load(src, env={})
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    bob = new_key(path, "bob")
    [(before, after)] = seen
    assert len(KeyRing.load(path, env={})) == 2
    assert "bob" not in before and "bob" in after
    ring = KeyRing.load(path, env={})
    assert ring.resolve(alice).users == frozenset({"alice"}) and ring.resolve(bob).users == frozenset({"bob"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    if name.endswith(".yaml"):
        assert path.read_text(encoding="utf-8").startswith("# our keys\n")  # the file's comments stay
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left


def test_a_keys_file_that_does_not_load_is_not_edited(tmp_path: Path):
    path = tmp_path / "keys.yaml"
    path.write_text("keys: [\n", encoding="utf-8")
    new_key(path, "alice", code=2)  # a ConfigError: the command line's usage code
    assert path.read_text(encoding="utf-8") == "keys: [\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.yaml"]


def test_a_reload_refuses_a_file_that_does_not_load_and_keeps_the_keys(tmp_path: Path):
    path = tmp_path / "keys.yaml"
    alice = new_key(path, "alice")
    state = SimpleNamespace(keys=KeyRing.load(path, env={}))
    good = path.read_text(encoding="utf-8")
    for broken in (good + '  - {"name": "bob", "sha256": "ab', good + "  - name: bob\n", "keys: {}\n"):
        path.write_text(broken, encoding="utf-8")
        assert reload_keys(state) is False
        assert state.keys.resolve(alice).users == frozenset({"alice"})
    path.write_text("keys: []\n", encoding="utf-8")  # no keys left: never opens a keyed service
    assert reload_keys(state) is False
    with pytest.raises(AuthError):
        state.keys.resolve(None)
