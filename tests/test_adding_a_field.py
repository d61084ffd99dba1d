"""Adding a caller-settable field to `add` (issue 59, docs/architecture.md "Adding a field"): in a copy of the package,
the field is written into the request model (contract/requests.py) and the record (models/record.py CARRIED), then
`python scripts/verbs.py --write` regenerates the faces. Nothing else is edited, and in a fresh process every face
takes the field: Memory.add, the Client (through the service, in-process), REST, the MCP tool's schema, AsyncMemory's
signature and the CLI's `add` (its help and a real add), and the stored memory carries it back."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "hippocampus/contract/requests.py"
RECORD = "hippocampus/models/record.py"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

CHECK = textwrap.dedent('''
    import asyncio, inspect, json, sys
    from pathlib import Path

    import httpx
    from typer.testing import CliRunner

    import hippocampus
    from hippocampus import AsyncMemory, Client, Memory
    from hippocampus.cli.app import app
    from hippocampus.server import create_app
    from hippocampus.server.mcp import build_server
    from hippocampus.testing import DeterministicEmbedder
    from tests.service_support import IN_PROCESS_URL, in_process

    tmp = Path(sys.argv[1])
    assert Path(hippocampus.__file__).is_relative_to(tmp), hippocampus.__file__  # the copy, not the checkout
    for face in (Memory.add, Client.add, AsyncMemory.add):
        assert inspect.signature(face).parameters["topic"].kind is inspect.Parameter.KEYWORD_ONLY, face

    memory = Memory(milvus_uri=str(tmp / "m.db"), embedder=DeterministicEmbedder())
    (mid,) = memory.add("I bought green tea", user_id="u", topic="shopping").ids
    assert memory.get(mid, "u").metadata["topic"] == "shopping"  # the record carries it back

    with in_process(create_app(memory, mcp=False, ui=False, close_memory=False)) as transport:
        with httpx.Client(base_url=IN_PROCESS_URL, transport=transport) as http:  # REST: the body is the model
            answer = http.post("/v1/memories", json={"messages": "I like oolong", "user_id": "u", "topic": "taste"})
            assert answer.status_code == 200, answer.text
            assert memory.get(answer.json()["ids"][0], "u").metadata["topic"] == "taste"
        with Client(IN_PROCESS_URL, transport=transport) as client:  # the Client, through the service
            (cid,) = client.add("I drink tea at noon", user_id="u", topic="habits").ids
            assert client.get(cid, "u").metadata["topic"] == "habits"

    class Tenant:
        def check(self, *args): pass
        def check_agent(self, owner, agent_id, missing): return agent_id

    tools = asyncio.run(build_server(memory, lambda ctx: Tenant()).list_tools())
    schema = next(t for t in tools if t.name == "add_memory").input_schema
    assert "what the turn is about" in schema["properties"]["topic"]["description"], schema

    memory.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["add", "--help"], terminal_width=200)
    assert "--topic" in shown.output, shown.output
    done = runner.invoke(app, ["--uri", str(tmp / "cli.db"), "--create", "add", "tea after dinner", "--user", "u", "--topic", "evening",
                               "--json"])
    assert done.exit_code == 0, done.output
    with Memory(milvus_uri=str(tmp / "cli.db")) as again:  # the settings' embedder, as the CLI's
        assert again.get(json.loads(done.output)["ids"][0], "u").metadata["topic"] == "evening"
    print("every face takes topic")
''')


def copy_package(tmp: Path) -> None:
    for folder in ("hippocampus", "scripts"):
        shutil.copytree(ROOT / folder, tmp / folder, ignore=shutil.ignore_patterns("__pycache__"))


def add_topic(tmp: Path) -> None:
    """The hand-edits: the field in the model, its name in the record's carried fields."""
    model = tmp / MODEL
    text = model.read_text(encoding="utf-8")
    end = text.index("\n\n\n", text.index("class AddRequest("))  # the last line of AddRequest's fields
    field = '\n    topic: str | None = Field(default=None, description="what the turn is about")'
    model.write_text(text[:end] + field + text[end:], encoding="utf-8")
    record = tmp / RECORD
    anchor = "CARRIED: dict[str, str] = {\n"
    text = record.read_text(encoding="utf-8")
    assert anchor in text
    record.write_text(text.replace(anchor, anchor + '    "topic": "what the turn is about",\n', 1), encoding="utf-8")


def changed(tmp: Path) -> set[str]:
    """The files of the copy that differ from the checkout's."""
    out = set()
    for path in (tmp / "hippocampus").rglob("*.py"):
        rel = path.relative_to(tmp).as_posix()
        if not (ROOT / rel).is_file() or not filecmp.cmp(path, ROOT / rel, shallow=False):
            out.add(rel)
    return out


def test_a_field_added_to_the_model_and_the_record_reaches_every_face(tmp_path):
    from hippocampus.contract import faces

    copy_package(tmp_path)
    add_topic(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "HIPPOCAMPUS_HOME": str(tmp_path / "home")}
    env.pop("HIPPOCAMPUS_SERVER", None)
    write = subprocess.run([sys.executable, "scripts/verbs.py", "--write"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
    assert write.returncode == 0, write.stdout + write.stderr
    generated = {faces.REQUESTED_PATH, faces.CLIENT_PATH, faces.ASYNC_MEMORY_PATH}
    assert changed(tmp_path) == {MODEL, RECORD} | generated  # two hand-edits; the rest is the regeneration
    check = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=500)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-6000:]
    assert "every face takes topic" in check.stdout


def test_the_architecture_page_lists_the_change_of_a_new_field():
    """docs/architecture.md's change list names exactly the files the test above edits, and the command."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("### Adding a field", 1)[1].split("\n#", 1)[0]
    for needed in (MODEL, RECORD, "python scripts/verbs.py --write", "store/schema.py"):
        assert needed in section, needed
