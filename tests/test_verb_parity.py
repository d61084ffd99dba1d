"""One list of verbs (hippocampus/contract/verbs.py), checked against every face: Memory itself, Client and
AsyncClient (signatures), REST (the app's OpenAPI schema), MCP (the server's tool list) and the CLI
(typer's click tree, `--json` included). A face that lacks a verb or an argument fails here unless
the declaration says why. The checkers return their findings, so a planted gap proves they can fail."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Iterable
from typing import Any

import pytest
import typer.main

from hippocampus import AsyncClient, Client, Memory, errors
from hippocampus.cli.app import app as cli_app
from hippocampus.contract.verbs import (
    CLI_NAMES,
    CLI_NO_JSON,
    CLI_ONLY,
    FACES,
    NOT_VERBS,
    VERBS,
    Face,
    Verb,
    by_name,
    mcp_tools,
    on,
    table,
)
from hippocampus.server import create_app
from hippocampus.server.auth import Tenant
from hippocampus.server.mcp import build_server

ERROR_NAMES = sorted(n for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, errors.HippocampusError))
CLIENT_OWN = {"close", "aclose", "healthy", "holds_store"}  # the connection's, not verbs


@pytest.fixture(scope="module")
def faces(tmp_path_factory, embedder) -> dict[str, Any]:
    """Each face as data: the OpenAPI schema, the MCP tools, the CLI's commands by path."""
    memory = Memory(milvus_uri=str(tmp_path_factory.mktemp("verbs") / "m.db"), embedder=embedder)
    try:
        schema = create_app(memory, mcp=False, ui=False, close_memory=False).openapi()
        tools = asyncio.run(build_server(memory, lambda ctx: Tenant(name="test")).list_tools())
    finally:
        memory.close()
    return {"openapi": schema, "tools": {t.name: t for t in tools}, "cli": cli_commands()}


def cli_commands() -> dict[str, Any]:
    """Every leaf command of the CLI by its path ("add", "models fetch")."""
    out: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            path = f"{prefix}{name}"
            if getattr(command, "commands", None):  # a group (typer vendors its own click)
                walk(command, path + " ")
            else:
                out[path] = command

    walk(typer.main.get_command(cli_app), "")
    return out


# ---------------------------------------------------------------------- the checkers
def missing_args(verb: Verb, face: Face, offered: Iterable[str], default: Any = None) -> list[str]:
    """The verb's arguments this face neither takes (under its name there) nor skips with a reason."""
    offered = set(offered)
    found = []
    for arg in verb.args:
        if arg.name in face.skips:
            continue
        wanted = face.names.get(arg.name) or (default(arg.name) if default else arg.name)
        if wanted not in offered:
            found.append(f"{verb.name}: {arg.name} (as {wanted!r}) missing")
    return found


def client_problems(verb: Verb, cls: type) -> list[str]:
    method = getattr(cls, verb.client.name or "", None)
    if method is None:
        return [f"{cls.__name__} has no {verb.client.name}"]
    params = {p.name: p for p in list(inspect.signature(method).parameters.values())[1:]}
    found = missing_args(verb, verb.client, params)
    for arg in verb.args:  # same defaults and keyword-only-ness as Memory, so a call moves unchanged
        p = params.get(arg.name)
        if p is not None and not arg.variadic:
            if (p.default is inspect.Parameter.empty) != arg.required or (not arg.required and p.default != arg.default):
                found.append(f"{cls.__name__}.{verb.name}: {arg.name} default {p.default!r}, Memory's {arg.default!r}")
            if (p.kind is p.KEYWORD_ONLY) != arg.keyword_only:
                found.append(f"{cls.__name__}.{verb.name}: {arg.name} keyword-only differs")
    return found


def rest_fields(schema: dict[str, Any], operation: dict[str, Any]) -> set[str]:
    """The names a REST operation takes: path and query parameters and the body's properties."""
    names = {p["name"] for p in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    for part in [body, *body.get("anyOf", [])]:
        ref = part.get("$ref")
        if ref:
            names |= set(schema["components"]["schemas"][ref.rsplit("/", 1)[-1]].get("properties", {}))
    return names


def rest_problems(verb: Verb, schema: dict[str, Any]) -> list[str]:
    method, path = (verb.rest.name or "").split(" ", 1)
    operation = schema["paths"].get(path, {}).get(method.lower())
    if operation is None:
        return [f"REST has no {verb.rest.name}"]
    found = missing_args(verb, verb.rest, rest_fields(schema, operation))
    if method == "GET" and verb.writes:
        found.append(f"{verb.name} writes but is served by GET")
    return found


def mcp_problems(verb: Verb, tools: dict[str, Any]) -> list[str]:
    tool = tools.get(verb.mcp.name or "")
    if tool is None:
        return [f"MCP has no tool {verb.mcp.name}"]
    found = missing_args(verb, verb.mcp, tool.input_schema.get("properties", {}))
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)
    if read_only == verb.writes:
        found.append(f"{verb.mcp.name}: read_only_hint {read_only} but the verb {'writes' if verb.writes else 'reads'}")
    return found


def cli_spellings(command: Any) -> set[str]:
    return {s for p in command.params for s in (p.name, *p.opts, *getattr(p, "secondary_opts", []))}


def cli_problems(verb: Verb, commands: dict[str, Any]) -> list[str]:
    words = (verb.cli.name or "").split()  # "export --format jsonl": the command, then the option that picks the verb
    cut = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
    path = " ".join(words[:cut])
    command = commands.get(path)
    if command is None:
        return [f"the CLI has no command {path!r}"]
    spellings = cli_spellings(command)
    found = [f"{path}: no option {w}" for w in words[cut:] if w.startswith("-") and w not in spellings]

    def default(arg: str) -> str:
        return CLI_NAMES.get(arg) or (arg if arg in spellings else "--" + arg.replace("_", "-"))

    return found + missing_args(verb, verb.cli, spellings, default)


# ---------------------------------------------------------------------- the declaration itself
def test_every_public_name_of_memory_is_declared_once():
    public = {n for n in dir(Memory) if not n.startswith("_")}
    names = [v.name for v in VERBS]
    assert len(names) == len(set(names)), "a verb is declared twice"
    assert public - set(names) - set(NOT_VERBS) == set(), "undeclared verbs of Memory: declare them in hippocampus/contract/verbs.py"
    assert set(names) | set(NOT_VERBS) <= public, "declared verbs that Memory does not have"


def test_every_face_names_the_verb_or_says_why_not():
    for verb in VERBS:
        arg_names = {a.name for a in verb.args}
        for which in FACES:
            face = verb.face(which)
            assert bool(face.name) != bool(face.omitted), f"{verb.name} on {which}: a name or a reason, not both"
            assert not face.omitted or len(face.omitted) > 20, f"{verb.name} on {which}: say why in words"
            assert set(face.names) | set(face.skips) <= arg_names, f"{verb.name} on {which} names unknown arguments"
            assert all(len(r) > 10 for r in face.skips.values()), f"{verb.name} on {which}: say why each argument is skipped"


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_declared_errors_are_the_ones_the_docstring_names(verb: Verb):
    doc = inspect.getdoc(verb.method) or ""
    named = {e for e in ERROR_NAMES if re.search(rf"(?<!never )\b{e}\b", doc)}
    assert set(verb.errors) == named, f"{verb.name}: declared {sorted(verb.errors)}, its docstring names {sorted(named)}"
    assert verb.result and verb.result != str(inspect.Signature.empty), f"{verb.name} declares no return type"


def test_the_table_shows_every_verb_and_face():
    text = table()
    assert all(f"{v.name}(" in text for v in VERBS) and "POST /v1/memories" in text and "MCP exposes only" in text


# ---------------------------------------------------------------------- the faces
def async_memory_problems(verb: Verb, cls: type) -> list[str]:
    """AsyncMemory's method for the verb: there, awaitable (an async iterator for an iterator), and with
    exactly Memory's signature (names, kinds, defaults, annotations)."""
    method = getattr(cls, verb.face("async_memory").name or "", None)
    if method is None:
        return [f"{cls.__name__} has no {verb.name}"]
    found = []
    if not (inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)):
        found.append(f"{cls.__name__}.{verb.name} is not a coroutine")
    theirs, ours = inspect.signature(verb.method), inspect.signature(method)
    first = list(theirs.parameters.values())  # a verb generated from its request (memory/requested.py) types its self
    theirs = theirs.replace(parameters=[first[0].replace(name="self", annotation=inspect.Parameter.empty), *first[1:]])
    returns = str(theirs.return_annotation)  # an iterator of Memory's is an async iterator here
    if ours != theirs.replace(return_annotation="Async" + returns if returns.startswith("Iterator[") else returns):
        found.append(f"{cls.__name__}.{verb.name}{ours} differs from Memory's")
    return found


def test_async_memory_has_every_verb_with_memorys_signature():
    from hippocampus import AsyncMemory

    assert [p for v in VERBS if v.face("async_memory").name for p in async_memory_problems(v, AsyncMemory)] == []
    public = {n for n in dir(AsyncMemory) if not n.startswith("_")}
    assert public - {v.name for v in VERBS} - set(NOT_VERBS) == {"aclose", "open", "wrap"}

    class Drifted(AsyncMemory):  # the checker can fail: a hand-written method that lost an argument
        async def get(self, memory_id: int) -> Any: ...

    assert async_memory_problems(by_name()["get"], Drifted) == [
        "Drifted.get(self, memory_id: 'int') -> 'Any' differs from Memory's"]


@pytest.mark.parametrize("cls", [Client, AsyncClient], ids=lambda c: c.__name__)
def test_client_and_async_client_have_every_declared_verb_with_memorys_arguments(cls: type):
    problems = [p for v in VERBS if v.client.name for p in client_problems(v, cls)]
    assert problems == []
    declared = {v.client.name for v in VERBS if v.client.name}
    extra = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))} - declared - CLIENT_OWN
    assert extra == set(), "Client methods that no verb declares"


def test_a_client_verb_without_a_request_or_a_request_without_a_verb_fails_to_generate(monkeypatch):
    """Client and AsyncClient are generated from the verb list (contract/faces.py): a verb whose Client face is on
    needs its request in `_Requests` (or a method written by hand in remote/transport.py), and every request a verb."""
    from hippocampus.contract import faces
    from hippocampus.remote.calls import _Requests
    from hippocampus.remote.transport import SyncTransport

    hand = vars(SyncTransport)
    forgotten = by_name()["get"].model_copy(update={"name": "forget_all", "client": on("forget_all")})
    monkeypatch.setattr(faces, "VERBS", (*VERBS, forgotten))
    with pytest.raises(ValueError, match=r"'forget_all' declares a Client face 'forget_all' .* _Requests .* has no 'forget_all'"):
        faces.client_verbs(_Requests, hand)
    # a method written by hand needs no request
    assert "forget_all" not in dict(faces.client_verbs(_Requests, {*hand, "forget_all"}))
    monkeypatch.setattr(faces, "VERBS", tuple(v for v in VERBS if v.name != "get"))
    with pytest.raises(ValueError, match=r"requests no verb's Client face declares: \['get'\]"):
        faces.client_verbs(_Requests, hand)
    assert str(inspect.signature(Client.add).return_annotation) == "AddResult" and Client.add.__qualname__ == "Client.add"
    assert Client.get.__doc__ == _Requests.get.__doc__


def test_rest_serves_every_declared_verb_and_nothing_undeclared(faces):
    schema = faces["openapi"]
    assert [p for v in VERBS if v.rest.name for p in rest_problems(v, schema)] == []
    declared = {v.rest.name for v in VERBS if v.rest.name}
    served = {f"{m.upper()} {path}" for path, ops in schema["paths"].items() if path.startswith("/v1/") for m in ops}
    assert served - declared == set(), "REST routes that no verb declares"


def test_mcp_tools_are_the_declared_ones_with_their_arguments(faces):
    tools = faces["tools"]
    assert [p for v in VERBS if v.mcp.name for p in mcp_problems(v, tools)] == []
    assert set(tools) == set(mcp_tools())


def test_cli_has_every_declared_verb_and_every_command_that_prints_data_takes_json(faces):
    commands = faces["cli"]
    assert [p for v in VERBS if v.cli.name for p in cli_problems(v, commands)] == []
    declared = {v.cli.name.split(" -")[0] for v in VERBS if v.cli.name}
    assert set(commands) - declared - set(CLI_ONLY) == set(), "CLI commands that neither a verb nor CLI_ONLY declares"
    no_json = {path for path, c in commands.items() if "--json" not in cli_spellings(c)}
    assert no_json == set(CLI_NO_JSON), "every command that prints data takes --json (or CLI_NO_JSON says why not)"


# ---------------------------------------------------------------------- the checkers can fail
def test_a_planted_gap_on_each_face_is_found(faces):
    verb = by_name()["search"]
    gap = verb.model_copy(update={"client": on("search", names={"graph": "graf"}), "rest": on("POST /v1/search", names={"mode": "moda"}),
                                  "mcp": on("search_memory"), "cli": on("search", names={"filters": "--filter"})})
    assert client_problems(gap, Client) == ["search: graph (as 'graf') missing"]
    assert rest_problems(gap, faces["openapi"]) == ["search: mode (as 'moda') missing"]
    assert {"search: mode (as 'mode') missing", "search: include_superseded (as 'include_superseded') missing"} <= set(
        mcp_problems(gap, faces["tools"]))
    assert cli_problems(gap, faces["cli"]) == ["search: memory_types (as '--memory-types') missing"]
    writer = by_name()["add"].model_copy(update={"rest": on("GET /v1/memories"), "mcp": on("get_memory")})
    assert "add writes but is served by GET" in rest_problems(writer, faces["openapi"])
    assert any("read_only_hint True" in p for p in mcp_problems(writer, faces["tools"]))
    assert cli_problems(verb.model_copy(update={"cli": on("graph --rebuild")}), faces["cli"])[0] == "graph: no option --rebuild"


def test_the_mcp_verbs_protocol_lists_exactly_the_verbs_with_a_tool():
    from hippocampus.server.mcp import ToolBackend

    members = {n for n in vars(ToolBackend) if not n.startswith("_")}
    assert members == {v.name for v in VERBS if v.mcp.name}


# ---------------------------------------------------------------------- the gaps this list found, fixed
@pytest.fixture(scope="module")
def service(tmp_path_factory, embedder) -> Any:
    """A real service (uvicorn on a loopback port, in a thread) over a fresh store: (url, memory)."""
    from tests.service_support import served

    memory = Memory(milvus_uri=str(tmp_path_factory.mktemp("served") / "m.db"), embedder=embedder)
    with served(create_app(memory, mcp=False, ui=False, close_memory=False)) as url:
        yield url, memory
    memory.close()


def through(url: str, *args: str, code: int = 0) -> Any:
    from typer.testing import CliRunner

    result = CliRunner(env={"COLUMNS": "200", "HIPPOCAMPUS_API_KEY": None}).invoke(cli_app, ["--server", url, *args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def _unstamped(md: str) -> str:
    """A MEMORY.md without its export time: two exports a moment apart may fall in two seconds."""
    return re.sub(r"<!-- Last updated: [^ ]+ -->", "", md).strip()


def test_export_import_and_graph_work_through_server_with_the_files_on_the_callers_side(service, tmp_path):
    """docs/cli.md: every command line works through the service with --server (export, import and graph were refused)."""
    import json

    url, memory = service
    mid = json.loads(through(url, "add", "I moved to Lisbon with my sister Ana", "-u", "alice", "--semantic", "--json").stdout)["ids"][0]
    text = through(url, "export", "-u", "alice").stdout
    assert "Lisbon" in text and f"[{mid}]" in text
    as_json = json.loads(through(url, "export", "-u", "alice", "--json").stdout)
    assert as_json["count"] == 1 and _unstamped(as_json["text"]) == _unstamped(text) and as_json["path"] is None
    md = tmp_path / "MEMORY.md"
    md.write_text(text.replace("Lisbon", "Porto"), encoding="utf-8")
    report = json.loads(through(url, "import", str(md), "-u", "alice", "--json").stdout)
    assert report["updated"] == [mid] and memory.get(mid, "alice").text == "I moved to Porto with my sister Ana"
    backup = tmp_path / "alice.jsonl"
    written = json.loads(through(url, "export", "-u", "alice", "-f", "jsonl", "--out", str(backup), "--json").stdout)
    assert written["count"] == 1 and json.loads(backup.read_text(encoding="utf-8"))["text"].startswith("I moved to Porto")
    restored = json.loads(through(url, "import", str(backup), "-u", "bob", "-f", "jsonl", "--json").stdout)
    assert len(restored["created"]) == 1 and memory.get(restored["created"][0], "bob").text.startswith("I moved to Porto")
    view = json.loads(through(url, "graph", "-u", "alice", "--build", "--json").stdout)
    assert view["built"]["memories_read"] == 1 and "Porto" in {e["name"] for e in view["entities"]}
    assert "entities of alice" in through(url, "graph", "-u", "alice").stdout


def test_a_service_never_reads_a_path_it_is_sent_and_names_no_temporary_file(service, tmp_path):
    import httpx

    url, memory = service
    planted = tmp_path / "planted.md"
    planted.write_text("# MEMORY\n\n## Active\n\n### [new] fact | 0.80 | 2026-01-01 | 0\nthe planted secret\n", encoding="utf-8")
    assert memory.import_md("probe", str(planted)).created  # in-process a one-line str is a path: the file parses
    reply = httpx.post(url + "/v1/import/md", json={"user_id": "carol", "text": str(planted)})
    assert reply.status_code == 200 and reply.json()["created"] == [] and memory.get_all("carol") == []
    bad = httpx.post(url + "/v1/import/jsonl", json={"user_id": "carol", "text": "{not json\n"})
    assert bad.status_code == 422 and bad.json()["error"]["message"].startswith("the JSONL sent: line 1")
    assert memory.get_all("carol") == []


def test_client_import_reads_the_callers_file_and_says_when_it_is_missing(service, tmp_path):
    url, _memory = service
    with Client(url) as client:
        report = client.import_md("dave", tmp_path / "absent.md")
        assert report.created == [] and report.warnings == [f"{tmp_path / 'absent.md'} does not exist; nothing imported"]
        with pytest.raises(errors.InvalidInput, match="cannot read"):
            client.import_jsonl("dave", tmp_path / "absent.jsonl")


def test_schedule_takes_json_and_each_run_is_one_json_line(tmp_path, embedder, capsys):
    import json

    from hippocampus.cli.consolidate import JsonRuns

    result = through("http://127.0.0.1:9", "schedule", "--json", "--cron", "at three", code=2)
    assert "No such option" not in result.stderr and "cron" in result.stderr
    runs = JsonRuns(Memory(milvus_uri=str(tmp_path / "s.db"), embedder=embedder))
    try:
        stats = runs.consolidate("erin")
    finally:
        runs.close()
    line = json.loads(capsys.readouterr().out.strip())
    assert line["event"] == "finished" and line["user_id"] == "erin" and line["stats"] == stats.model_dump()
