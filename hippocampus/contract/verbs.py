"""Every public verb of `Memory`, declared once, and where each face (Client/AsyncClient, REST, MCP, CLI)
offers it, or why it does not.

The declaration is data: per verb whether it writes, the errors it raises and one `Face` per face.
The arguments and the result model are not copied here: they are read from Memory's own signature
(`Verb.args`, `Verb.result`; memory/facade.py registers the class as it loads, so this module imports
nothing above it), so they cannot drift. tests/test_verb_parity.py checks every face
against this list: a verb of Memory that is undeclared, a face that lacks a declared verb or one of
its arguments, a CLI command without `--json`: each fails unless the declaration says why.
`python scripts/verbs.py` prints the table.

A face names a verb by its own word: the Client's method, REST's "METHOD /v1/path", MCP's tool, the
CLI's command (with the option that selects the verb, e.g. "export --format jsonl"). Arguments keep
their names unless `names` says otherwise (for the CLI `CLI_NAMES` is the house convention).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Face(BaseModel):
    """A verb on one face: its name there, or `omitted` with the reason."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    omitted: str | None = None
    names: Mapping[str, str] = Field(default_factory=dict)  # verb argument -> its name on this face
    skips: Mapping[str, str] = Field(default_factory=dict)  # verb argument -> why this face does not take it


class Arg(BaseModel):
    """One argument, as Memory's signature declares it."""

    model_config = ConfigDict(frozen=True)

    name: str
    annotation: str
    required: bool
    default: Any = None
    keyword_only: bool = False
    variadic: bool = False  # **filters


class Verb(BaseModel):
    """One public verb of Memory and its faces."""

    model_config = ConfigDict(frozen=True)

    name: str
    writes: bool
    errors: tuple[str, ...]
    client: Face
    rest: Face
    mcp: Face
    cli: Face
    async_memory: Face | None = None  # None: AsyncMemory offers it under its own name (memory/async_memory.py)

    def face(self, which: str) -> Face:
        if which == "async_memory" and self.async_memory is None:
            return Face(name=self.name)  # AsyncMemory is built from this list: every verb, Memory's signature
        face: Face = getattr(self, which)
        return face

    @property
    def method(self) -> Callable[..., Any]:
        """Memory's method of this name (the facade registers its class when it loads: `register_facade`)."""
        if not _FACADE:
            raise LookupError("the verbs read Memory's signatures: import hippocampus.memory first (it registers itself)")
        method: Callable[..., Any] = getattr(_FACADE[0], self.name)
        return method

    @property
    def args(self) -> tuple[Arg, ...]:
        """Read from Memory's signature: names, annotations, defaults, keyword-only."""
        out = []
        for p in list(inspect.signature(self.method).parameters.values())[1:]:
            out.append(Arg(name=p.name, annotation=str(p.annotation), required=p.default is inspect.Parameter.empty
                           and p.kind is not p.VAR_KEYWORD, default=None if p.default is inspect.Parameter.empty else p.default,
                           keyword_only=p.kind is p.KEYWORD_ONLY, variadic=p.kind is p.VAR_KEYWORD))
        return tuple(out)

    @property
    def result(self) -> str:
        """The return annotation of Memory's method, e.g. "AddResult"."""
        return str(inspect.signature(self.method).return_annotation)

    @property
    def summary(self) -> str:
        return (inspect.getdoc(self.method) or "").split("\n\n")[0].replace("\n", " ")


# The facade's class, registered by memory/facade.py as it loads: the declaration sits below the facade
# (the faces and tracing read it) and so never imports it.
_FACADE: list[type] = []


def register_facade(cls: type) -> type:
    """Make `cls` (Memory) the class whose signatures `Verb.args`, `Verb.result` and `Verb.summary` read."""
    _FACADE[:] = [cls]
    return cls


FACES = ("client", "rest", "mcp", "cli", "async_memory")
V1 = "/v1"
CLI_NAMES = {"user_id": "--user", "chat_id": "--chat", "metadata": "--meta", "memory_type": "--type", "agent_id": "--agent",
             "run_id": "--run"}

# Why a verb has no MCP tool. The tools are the verbs below with an `mcp=on(...)` face (`mcp_tools()`), and
# tests/test_verb_parity.py checks that the MCP server serves exactly those.
NOT_AN_AGENT_TOOL = ("MCP exposes only the agent-facing tools (mcp_tools(): write, read, history, context and "
                     "observe the memories of a conversation): an agent's tool list stays short; operators use "
                     "REST, the Client or the CLI")
UI_VIEW = "a Web UI view: server/ui.py renders it in-process under /ui; there is no JSON route, so no Client method"
CALLBACK = "a callback in the caller's process: nothing streams back over HTTP"
NOW_SIM = "`now` is for in-process simulations: a service uses its own clock"
SERVICE_DECIDES = "the service decides pending turns itself: its pending worker (server/jobs.py) and every consolidate"
PAGED = "REST pages (GET /v1/memories is `page`); Client.get_all and iter_all page through it"


def on(name: str, names: dict[str, str] | None = None, skips: dict[str, str] | None = None) -> Face:
    """The face offers the verb as `name`."""
    return Face(name=name, names=names or {}, skips=skips or {})


def off(reason: str) -> Face:
    """The face leaves the verb out, for `reason`."""
    return Face(omitted=reason)


R, RW = ("InvalidInput", "StoreError"), ("InvalidInput", "StoreError", "EmbeddingError")
RN, RWN = ("InvalidInput", "NotFound", "StoreError"), ("InvalidInput", "NotFound", "StoreError", "EmbeddingError")

VERBS: tuple[Verb, ...] = (
    # ------------------------------------------------------------------ writing
    Verb(name="add", writes=True, errors=RW, client=on("add"), rest=on(f"POST {V1}/memories"),
         mcp=on("add_memory", names={"messages": "text"}),
         cli=on("add", names={"messages": "text", "memory_type": "--semantic"})),
    Verb(name="add_many", writes=True, errors=RW, client=on("add_many"), rest=on(f"POST {V1}/memories/batch"), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("bulk loading is `import` (MEMORY.md or a JSONL backup); one turn is `add`")),
    Verb(name="update", writes=True, errors=RWN, client=on("update"), rest=on(f"PATCH {V1}/memories/{{memory_id}}"),
         mcp=on("update_memory"), cli=on("update")),
    Verb(name="delete", writes=True, errors=RN, client=on("delete"), rest=on(f"DELETE {V1}/memories/{{memory_id}}"),
         mcp=on("delete_memory"), cli=on("delete")),
    Verb(name="update_many", writes=True, errors=R, client=on("update_many"), rest=on(f"POST {V1}/memories/batch/update"),
         mcp=on("update_memories"), cli=on("update-many", names={"items": "--file"})),
    Verb(name="delete_many", writes=True, errors=R, client=on("delete_many"), rest=on(f"POST {V1}/memories/batch/delete"),
         mcp=on("delete_memories"), cli=on("delete-many")),
    Verb(name="reset", writes=True, errors=R, client=on("reset"), rest=on(f"DELETE {V1}/memories"), mcp=off(NOT_AN_AGENT_TOOL),
         cli=on("reset")),
    Verb(name="mark_used", writes=True, errors=RWN, client=on("mark_used"), rest=on(f"POST {V1}/memories/used"),
         mcp=off(NOT_AN_AGENT_TOOL + " (observe_turn counts the memories an answer used)"),
         cli=off("reported by the agent that answered (Client, REST, MCP observe_turn); a shell has no answer to report")),
    Verb(name="observe", writes=True, errors=RW, client=on("observe"), rest=on(f"POST {V1}/observe"),
         mcp=on("observe_turn", names={"messages": "exchange"},
                skips={"who": "an agent's turn is the user's", "metadata": "the judgement writes what it keeps",
                       "ts": "a turn is observed as it happens (now)"}),
         cli=off("an agent's after-turn hook that needs the ids the agent was shown; `add --infer` remembers a turn from a shell")),
    # ------------------------------------------------------------------ reading
    Verb(name="search", writes=False, errors=R, client=on("search"), rest=on(f"POST {V1}/search"),
         mcp=on("search_memory", skips={"mode": "the service's search_mode serves agents",
                                        "include_superseded": "superseded facts are history, not answers (memory_history shows them)",
                                        "memory_types": "memory_type picks one kind; several kinds at once are for the library"}),
         cli=on("search", names={"filters": "--filter"},
                skips={"memory_types": "--type picks one kind; several kinds at once are for the library"})),
    Verb(name="get", writes=False, errors=RN, client=on("get"), rest=on(f"GET {V1}/memories/{{memory_id}}"), mcp=on("get_memory"),
         cli=on("get")),
    Verb(name="get_all", writes=False, errors=R, client=on("get_all"), rest=off(PAGED), mcp=off(NOT_AN_AGENT_TOOL + " (list_memories pages)"),
         cli=on("list")),
    Verb(name="page", writes=False, errors=R, client=on("page"), rest=on(f"GET {V1}/memories"), mcp=on("list_memories"),
         cli=off("`list` prints every memory (get_all), paging through the store itself")),
    Verb(name="iter_all", writes=False, errors=R, client=on("iter_all"), rest=off(PAGED), mcp=off(NOT_AN_AGENT_TOOL + " (list_memories pages)"),
         cli=off("`list` prints every memory (get_all), paging through the store itself")),
    Verb(name="history", writes=False, errors=RN, client=on("history"), rest=on(f"GET {V1}/memories/{{memory_id}}/history"),
         mcp=on("memory_history"), cli=on("history")),
    Verb(name="stats", writes=False, errors=R, client=on("stats"), rest=on(f"GET {V1}/stats"), mcp=off(NOT_AN_AGENT_TOOL), cli=on("stats")),
    Verb(name="context", writes=False, errors=R, client=on("context"), rest=on(f"GET {V1}/context", skips={"now": NOW_SIM}),
         mcp=on("memory_context", skips={"min_score": "agents get the default threshold; max_items bounds the block",
                                         "now": NOW_SIM}),
         cli=on("context", names={"max_items": "--max"}, skips={"now": NOW_SIM + "; the CLI prints the block as of now"})),
    # ------------------------------------------------------------------ lifecycle
    Verb(name="decay", writes=True, errors=R, client=on("decay"), rest=on(f"POST {V1}/decay", skips={"progress": CALLBACK}),
         mcp=off(NOT_AN_AGENT_TOOL), cli=on("decay", skips={"progress": "decay prints its counts when it ends"})),
    Verb(name="last_decay", writes=False, errors=("StoreError",),
         client=off("when the last full decay pass ran: the service reads it to decide its decay at start; not a caller's verb"),
         rest=off("read by the service itself (server/jobs.py, decay at start)"), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("an operational detail of the service's decay at start")),
    Verb(name="restore", writes=True, errors=RWN, client=on("restore"), rest=on(f"POST {V1}/memories/{{memory_id}}/restore"),
         mcp=off(NOT_AN_AGENT_TOOL), cli=on("restore")),
    Verb(name="curate", writes=True, errors=RN, client=on("curate"), rest=on(f"POST {V1}/memories/{{memory_id}}/curate"),
         mcp=off(NOT_AN_AGENT_TOOL), cli=on("curate")),
    Verb(name="undo", writes=True, errors=RWN, client=on("undo"), rest=on(f"POST {V1}/history/{{event_id}}/undo"),
         mcp=off(NOT_AN_AGENT_TOOL), cli=on("undo")),
    Verb(name="score_now", writes=False, errors=(),
         client=off("a pure function of a record and the clock (no store): computed where the record is "
                    "(hippocampus.lifecycle.policy.score_of)"),
         rest=off("a pure function of a record and the clock: nothing for a service to do"), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("`export` (MEMORY.md) shows each memory's score now")),
    # ------------------------------------------------------------------ consolidation and graph
    Verb(name="consolidate", writes=True, errors=RW, client=on("consolidate"),
         rest=on(f"POST {V1}/consolidate", skips={"progress": CALLBACK}), mcp=off(NOT_AN_AGENT_TOOL),
         cli=on("consolidate", skips={"progress": "drawn as a progress bar"})),
    Verb(name="decide_pending", writes=True, errors=R, client=off(SERVICE_DECIDES), rest=off(SERVICE_DECIDES), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("`consolidate` runs it as its first phase")),
    Verb(name="build_graph", writes=True, errors=RW, client=on("build_graph"),
         rest=on(f"POST {V1}/graph/build", skips={"progress": CALLBACK}), mcp=off(NOT_AN_AGENT_TOOL),
         cli=on("graph --build", skips={"progress": "the command prints the build's counts when it ends"})),
    Verb(name="graph", writes=False, errors=R, client=on("graph"), rest=on(f"GET {V1}/graph"), mcp=off(NOT_AN_AGENT_TOOL), cli=on("graph")),
    # ------------------------------------------------------------------ export and import
    Verb(name="export_md", writes=False, errors=R, client=on("export_md"),
         rest=on(f"GET {V1}/export/md", skips={"path": "a file on the caller's machine: the Client writes it"}), mcp=off(NOT_AN_AGENT_TOOL),
         cli=on("export --format md", names={"path": "--out"}, skips={"now": "an export is as of now; `now` is for simulations"})),
    Verb(name="import_md", writes=True, errors=RW, client=on("import_md"),
         rest=on(f"POST {V1}/import/md", names={"text_or_path": "text"}), mcp=off(NOT_AN_AGENT_TOOL),
         cli=on("import --format md", names={"text_or_path": "path"})),
    Verb(name="export_jsonl", writes=False, errors=R, client=on("export_jsonl"),
         rest=on(f"GET {V1}/export/jsonl", skips={"path": "a file on the caller's machine: the Client writes it"}), mcp=off(NOT_AN_AGENT_TOOL),
         cli=on("export --format jsonl", names={"path": "--out"})),
    Verb(name="import_jsonl", writes=True, errors=RW, client=on("import_jsonl"),
         rest=on(f"POST {V1}/import/jsonl", names={"path": "text"}), mcp=off(NOT_AN_AGENT_TOOL), cli=on("import --format jsonl")),
    # ------------------------------------------------------------------ the Web UI's views
    Verb(name="browse", writes=False, errors=R, client=off(UI_VIEW), rest=off(UI_VIEW), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("the Web UI's filtered view; the CLI reads with `list` and `search`")),
    Verb(name="overview", writes=False, errors=R, client=off(UI_VIEW), rest=off(UI_VIEW), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("the Web UI's statistics page; the CLI has `stats`")),
    Verb(name="export_view", writes=False, errors=R, client=off(UI_VIEW), rest=off(UI_VIEW), mcp=off(NOT_AN_AGENT_TOOL),
         cli=off("the Web UI exports what its filters show; the CLI's `export` writes all of a user's memories")),
)

# Public names of Memory that are not verbs.
NOT_VERBS = {
    "close": "releases the store; every face has its own (Client.close, AsyncClient.aclose, the service's shutdown)",
    "llm": "the configured chat model, a property (a service wraps it to count calls)",
    "override": "a context manager that swaps the chat model for a block (users' tests); no face serves a model swap",
    "config": "the settings (MemoryConfig) every service reads, a property; each face has its own configuration",
    "owner_of": "whose memory an id is, for a library face whose callers name a memory by id alone (the mem0 drop-in, "
                "compat/mem0.py); a remote caller names its user, as every face's get does",
    "renew_expiry": "a library helper for adapters that renew an expiry on read (the LangGraph store's TTL refresh): "
                    "no history event, so not a change a remote caller makes; update_many sets an expiry with history",
    "user_ids": "every user of the store, for the mem0 drop-in's reset of a whole local store; a remote face's users "
                "are its keys'",
}
# CLI commands that are not a verb of Memory, and what they are.
CLI_ONLY = {
    "demo": "a self-contained offline demonstration on a temporary store",
    "schedule": "consolidate on a cron schedule (a blocking loop)",
    "serve": "starts the service (REST, MCP, UI)",
    "mcp": "the MCP tools over stdio",
    "models fetch": "downloads a local embedding model",
    "reembed": "re-embeds a store with another embedder",
    "keys new": "makes an API key",
    "service status": "lists the services `serve` (or connect()) recorded on this machine",
    "service stop": "stops a recorded service (SIGTERM) and removes its record",
}
# CLI commands that print no data, so take no --json, and why.
CLI_NO_JSON = {
    "serve": "runs until stopped; prints logs, not data",
    "mcp": "stdout carries the MCP protocol itself",
    "models fetch": "prints the settings lines to paste into hippocampus.yaml; progress goes to stderr",
}


def mcp_tools() -> tuple[str, ...]:
    """The MCP tools, in declaration order: the names of the verbs whose MCP face is on."""
    return tuple(v.mcp.name for v in VERBS if v.mcp.name)


def by_name() -> dict[str, Verb]:
    return {v.name: v for v in VERBS}


def table() -> str:
    """The declaration as text: one line per verb and face."""
    lines = []
    for verb in VERBS:
        args = ", ".join(a.name + ("" if a.required else "?") for a in verb.args)
        lines.append(f"{verb.name}({args}) -> {verb.result}  [{'writes' if verb.writes else 'reads'}; "
                     f"raises {', '.join(verb.errors) or 'nothing'}]")
        for which in FACES:
            face = verb.face(which)
            lines.append(f"    {which:<6} {face.name if face.name else '-- ' + str(face.omitted)}")
    return "\n".join(lines)
