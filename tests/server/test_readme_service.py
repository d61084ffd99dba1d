"""The service page (docs/service.md, once the README's "Run it as a service") run as written: its
Python block against a real service (found through HIPPOCAMPUS_SERVER, as connect() finds it); every
command line of it and of the CLI page names a real command and real options; the MCP page's config
names the real command and endpoint. (tests/docs/test_readme_blocks.py runs the README's own blocks.)"""

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

DOCS = Path(__file__).resolve().parents[2] / "docs"
SERVICE = DOCS / "service.md"


def _blocks(lang: str, *pages: str) -> list[str]:
    return [block for page in pages or ("service.md",)
            for block in re.findall(rf"```{lang}\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S)]


def test_the_python_block_runs_against_a_service(shared_db, embedder, monkeypatch):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"rd_{uuid.uuid4().hex[:10]}", embedder=embedder)
    with served(create_app(memory, mcp=False)) as url:
        monkeypatch.setenv("HIPPOCAMPUS_SERVER", url)
        (code,) = _blocks("python")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(SERVICE), "exec"), {})
        assert out.getvalue().strip() == "I moved to Berlin in May"
        assert memory.get_all("alice")[0].chat_id == "c1"  # it went to the service's store


def test_the_shell_lines_and_the_mcp_config_name_real_commands():
    group = typer.main.get_command(app)
    commands = set(group.commands)  # type: ignore[attr-defined]
    lines = [line for block in _blocks("bash", "service.md", "cli.md") for line in block.splitlines() if "hippocampus " in line]
    assert len(lines) >= 10
    for line in lines:
        words = shlex.split(line.split("#")[0].split(">>")[0].split("$(")[-1].split("|")[0])
        words = words[words.index("hippocampus") + 1 :]
        command = next(w for w in words if not w.startswith("-") and not w.startswith("http"))
        assert command in commands, line
        path = [command]
        sub = group.commands[command]  # type: ignore[attr-defined]
        rest = words[words.index(command) + 1 :]
        if hasattr(sub, "commands") and rest and rest[0] in sub.commands:  # a group: `keys new`, `service stop`
            path.append(rest.pop(0))
        help_run = CliRunner().invoke(app, [*path, "--help"])
        assert help_run.exit_code == 0, line
        for option in (w.split("=")[0] for w in rest if w.startswith("--")):
            assert option in help_run.output, f"{option} of {line!r}"
    (config,) = _blocks("json", "mcp.md")
    servers = json.loads(config)["mcpServers"]
    assert servers["memory"]["args"][-1] == "mcp" and "mcp" in commands
    assert servers["memory-http"]["url"].endswith("/mcp")
