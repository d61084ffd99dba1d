"""How the CLI shows things: rich tables for people, plain JSON for scripts.

Kept apart from the commands so that every command prints records, hits and history the same way.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from ..models import HistoryEvent, MemoryRecord, SearchHit, SearchResult

TEXT_WIDTH = 70


def when(ts: int | None) -> str:
    """Epoch seconds as a short UTC date and time."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def short(text: str, width: int = TEXT_WIDTH) -> str:
    """One line, at most `width` characters (the full text is in `get` and `--json`)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def dumps(value: Any) -> str:
    """JSON for scripts: UTF-8 text kept readable (Chinese stays Chinese)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def record_json(record: MemoryRecord) -> dict[str, Any]:
    return record.model_dump(mode="json")


def hit_json(hit: SearchHit) -> dict[str, Any]:
    return {**record_json(hit.memory), "score": hit.score, "similarity": hit.similarity}


def result_json(result: SearchResult) -> dict[str, Any]:
    out = {"episodic": [hit_json(h) for h in result.episodic], "semantic": [hit_json(h) for h in result.semantic]}
    if result.procedural:
        out["procedural"] = [hit_json(h) for h in result.procedural]
    return out


def records_table(records: Iterable[MemoryRecord], title: str | None = None) -> Table:
    table = Table(title=title, show_lines=False)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("chat", no_wrap=True)
    table.add_column("who", no_wrap=True)
    table.add_column("hits", justify="right")
    table.add_column("text")
    for r in records:
        table.add_row(str(r.id), r.memory_type.value, when(r.ts), short(r.chat_id, 16), short(r.who, 16), str(r.hit_count), short(r.text))
    return table


def hits_table(result: SearchResult, title: str | None = None, rows: int | None = None) -> Table:
    """One ranked list, both kinds together in `SearchResult.all`'s order (scores compare only within
    a kind; where the kinds meet the cosine decides), at most `rows` rows, the kind on each."""
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("type", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("cosine", justify="right")
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("text")
    hits = result.all if rows is None else result.all[:rows]
    for i, hit in enumerate(hits, 1):
        cos = "" if hit.similarity is None else f"{hit.similarity:.3f}"
        table.add_row(str(i), hit.memory.memory_type.value, f"{hit.score:.3f}", cos, str(hit.id), when(hit.memory.ts), short(hit.text))
    return table


def record_table(record: MemoryRecord) -> Table:
    """Every field of one memory, metadata included, as a two-column table."""
    table = Table(show_header=False, title=f"memory {record.id}")
    table.add_column("field", style="bold")
    table.add_column("value")
    data = record.model_dump(mode="json")
    meta = data.pop("metadata", {})
    for key, value in data.items():
        shown = when(value) if key in ("ts", "created_at", "updated_at") and value is not None else value
        table.add_row(key, str(shown))
    for key, value in sorted(meta.items()):
        table.add_row(f"metadata.{key}", value if isinstance(value, str) else dumps(value))
    return table


def history_table(events: Iterable[HistoryEvent], memory_id: int) -> Table:
    table = Table(title=f"history of memory {memory_id}")
    table.add_column("event id", justify="right", no_wrap=True)  # what `hippocampus undo` takes
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("event", no_wrap=True)
    table.add_column("by", no_wrap=True)
    table.add_column("old text")
    table.add_column("new text")
    for e in events:
        table.add_row(str(e.event_id or ""), when(e.at), e.action.value, e.actor, short(e.old_text or "", 40), short(e.new_text or "", 40))
    return table


def stats_table(stats: dict[str, Any]) -> Table:
    table = Table(show_header=False, title="store")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    for key, value in stats.items():
        if key != "service":  # a service's own figures get a table of their own
            table.add_row(str(key), str(value))
    return table


def endpoints_table(service: dict[str, Any]) -> Table:
    """A service's requests per endpoint with p50/p99 latency (from its Prometheus histograms)."""
    table = Table(title=f"service {service.get('version', '')}, up {service.get('uptime_s', 0):.0f} s")
    for name, justify in (("endpoint", "left"), ("requests", "right"), ("errors", "right"), ("p50 ms", "right"), ("p99 ms", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for endpoint, row in service.get("endpoints", {}).items():
        table.add_row(endpoint, f"{row['requests']:.0f}", f"{row['errors']:.0f}", f"{row['p50_ms']:.1f}", f"{row['p99_ms']:.1f}")
    return table


def error_line(exc: BaseException) -> str:
    """One line for a terminal: the error's class and message, pydantic's multi-line detail folded."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    kept = [ln for ln in lines if ln and not ln.startswith("For further information")]
    return f"{type(exc).__name__}: {' | '.join(kept) or 'failed'}"


def err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)
