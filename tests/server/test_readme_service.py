"""README's "Run it as a service" section, run as written: its Python block against a real service
(found through HIPPOCAMPUS_SERVER, as connect() finds it), its cron line's command, its MCP config."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import uuid
from pathlib import Path

import typer
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app
from hippocampus.server import create_app
from tests.service_support import served

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Run it as a service")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), flags=re.S)


def test_the_python_block_runs_against_a_service(shared_db, embedder, monkeypatch):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"rd_{uuid.uuid4().hex[:10]}", embedder=embedder)
    with served(create_app(memory, mcp=False)) as url:
        monkeypatch.setenv("HIPPOCAMPUS_SERVER", url)
        (code,) = _blocks("python")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), {})
        assert out.getvalue().strip() == "I moved to Berlin in May"
        assert memory.get_all("alice")[0].chat_id == "c1"  # it went to the service's store


def test_the_shell_lines_and_the_mcp_config_name_real_commands():
    commands = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    for block in _blocks("bash"):
        for line in block.splitlines():
            words = shlex.split(line.split("#")[0].split(">>")[0])
            words = words[words.index("hippocampus") + 1 :]
            command = next(w for w in words if not w.startswith("-") and not w.startswith("http"))
            assert command in commands, line
            help_run = CliRunner().invoke(app, [command, "--help"])
            assert help_run.exit_code == 0
            for option in (w for w in words[words.index(command) + 1 :] if w.startswith("--")):
                assert option in help_run.output, f"{option} of {line!r}"
    (config,) = _blocks("json")
    servers = json.loads(config)["mcpServers"]
    assert servers["memory"]["args"][-1] == "mcp" and "mcp" in commands
    assert servers["memory-http"]["url"].endswith("/mcp")
