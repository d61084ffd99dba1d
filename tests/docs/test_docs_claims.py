"""The docs' claims about the faces, held to the code (issue 45, item 4): which commands take
`--json`, which work through `--server`, and the MCP tool list. Before: docs/cli.md said every
command takes --json (serve, mcp, models do not) and every command line works with --server (demo
ignores it); docs/mcp.md listed 9 tools of 11."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import click
import typer

from hippocampus.cli.app import app

WORDS = re.compile(r"`([a-z_][a-z_ -]*)`")
ROOT = Path(__file__).resolve().parents[2]


def commands() -> dict[str, click.Command]:
    """Every command a user runs, by its full name (`service status`)."""
    out: dict[str, click.Command] = {}
    for name, command in typer.main.get_command(app).commands.items():  # type: ignore[attr-defined]
        for sub, leaf in (getattr(command, "commands", None) or {None: command}).items():
            out[f"{name} {sub}" if sub else name] = leaf
    return out


def sentence(doc: str, start: str, ends: str = ".:") -> str:
    """The sentence of `doc` (newlines folded) that starts with `start`, up to the first of `ends`
    followed by a space."""
    flat = " ".join(doc.split())
    at = flat.index(start)
    return re.split(rf"(?<=[{ends}])\s", flat[at + len(start):], maxsplit=1)[0]


def named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_][a-z_ -]*)`", text))


def takes_json(command: click.Command) -> bool:
    return any("--json" in p.opts for p in command.params)


def opens_memory(command: click.Command) -> bool:
    """Whether the command's own code opens the store through base.open_memory (which honours --server)."""
    source = inspect.getsource(inspect.unwrap(command.callback))  # type: ignore[arg-type]
    return "open_memory" in source and "--server names a service to use" not in source and "drop --server" not in source


def test_cli_md_names_exactly_the_commands_without_json_and_without_server():
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    without_json = {name for name, c in commands().items() if not takes_json(c)}
    assert named(sentence(doc, "Every command takes `--json`", ends=".").split(" no result:", 1)[1]) == without_json
    local = {name for name, c in commands().items() if not opens_memory(c)}
    claim = sentence(doc, "these work on this machine instead:")
    assert named(claim) == local, (named(claim), local)


def test_mcp_md_lists_every_tool_the_server_registers():
    tree = ast.parse((ROOT / "hippocampus" / "server" / "mcp.py").read_text(encoding="utf-8"))
    tools = {node.name for node in ast.walk(tree) if isinstance(node, ast.AsyncFunctionDef)
             and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "tool" for d in node.decorator_list)}
    assert len(tools) >= 11
    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    listed = sentence(doc, "Any MCP-capable agent can use the memory without Python:", ends=".;")
    assert named(listed) == tools
    assert f"{len(tools)} tools" in listed


def test_the_typescript_example_finds_its_own_memory(shared_db, embedder):
    """Before: "Where does the user live?" ranked the sister in Lisbon (and her fact) above the
    example's own memory, which a reader following the README had stored beside her."""
    import uuid

    from hippocampus import Memory

    for doc in (ROOT / "clients" / "typescript" / "README.md", ROOT / "docs" / "typescript.md"):
        block = doc.read_text(encoding="utf-8")
        added = re.search(r'memory\.add\("([^"]+)", "alice"', block).group(1)  # type: ignore[union-attr]
        query = re.search(r'memory\.search\("([^"]+)", "alice"', block).group(1)  # type: ignore[union-attr]
        memory = Memory(milvus_uri=str(shared_db), collection_name=f"ts_{uuid.uuid4().hex[:10]}", embedder=embedder)
        memory.add("My sister Ana lives in Lisbon", user_id="alice", chat_id="c1")  # the README's quick start before it
        memory.add(added, user_id="alice", chat_id="c1")
        memory.consolidate("alice")
        top = [h.text for h in memory.search(query, user_id="alice", limit=5).all[:3]]
        memory.close()
        assert added in top, (doc.name, query, top)
