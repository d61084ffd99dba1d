"""How the CLI shows things: rich tables for people, plain JSON for scripts.

Kept apart from the commands so that every command prints records, hits and history the same way.
Whatever a user wrote (a memory's text, ids, metadata, a message or error that quotes them) reaches
rich only through `literal`: a rich Text, never parsed as markup ("[/x]" in a note once crashed
`list`; "[bold]" vanished) or emoji codes, its control characters shown as \\xNN.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..models import HistoryEvent, MemoryRecord, SearchHit, SearchResult

TEXT_WIDTH = 70
WIDE = 120  # below this many columns the tables fold `when` onto two lines and merge small columns
COMPACT = 90  # below this many columns `history` shows the event and the change in two columns
MIN_TEXT = 24  # the text column's least share; to keep it, small columns are left out on a narrow terminal
UNLIMITED = 100_000  # --wide: never wrap nor cut (the terminal or a pager scrolls sideways)
# Control characters that are not whitespace: shown as \xNN (raw, an ESC sequence recolours or clears the terminal)
_HIDDEN = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
_ODD_SPACE = re.compile(r"[\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]")  # whitespace that moves the cursor: a plain space


def visible(text: str) -> str:
    """`text` safe for a terminal: control characters as \\xNN, odd whitespace as a space; the rest unchanged."""
    return _ODD_SPACE.sub(" ", _HIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


def literal(value: object, style: str = "") -> Text:
    """User-controlled text exactly as written (see the module's docstring): the one way it reaches rich."""
    return Text(visible(str(value)), style=style)


def console(stderr: bool = False, wide: bool = False) -> Console:
    """A Console that never highlights or reads emoji codes in strings (user text comes as `literal`);
    `wide` (`--wide`): as wide as the lines are, nothing wrapped or cut."""
    return Console(stderr=stderr, highlight=False, emoji=False, soft_wrap=stderr, width=UNLIMITED if wide else None)


def terminal_width() -> int:
    """The width rich will print at (COLUMNS, else the terminal, else 80)."""
    return console().width


def when(ts: int | None) -> str:
    """Epoch seconds as a short UTC date and time."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def short(text: str, width: int = TEXT_WIDTH) -> str:
    """One line, at most `width` terminal cells (a Chinese character takes two; the full text is in
    `get`, `--wide` and `--json`), cut after a whole word where the text has spaces."""
    flat = " ".join(text.split())
    if cell_len(flat) <= width:
        return flat
    kept, used = [], 0
    for char in flat:
        used += cell_len(char)
        if used > width - 1:
            break
        kept.append(char)
    cut = "".join(kept)
    if flat[len(cut)] != " " and " " in cut[len(cut) // 2:]:  # mid-word: back to the last space
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def fold_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells, its middle replaced by "…": a path keeps its root and (in the
    larger part) its end, the file name."""
    if cell_len(text) <= width or width < 5:
        return text
    head = (width - 1) // 3
    tail = width - 1 - head
    return text[:head] + "…" + text[len(text) - tail:]


def plural(count: int, one: str, many: str | None = None) -> str:
    """`1 memory`, `2 memories`."""
    return f"{count} {one if count == 1 else many or one + 's'}"


def _cells(value: Any) -> int:
    """The widest line of a cell, in terminal cells."""
    plain = value.plain if isinstance(value, Text) else str(value)
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def fitted(width: int, columns: list[tuple[str, list[Any], int]]) -> set[str]:
    """The names of the columns to show at `width`: (name, cells, drop order; 0 = always) in table
    order, the text column (the last, flexible) kept at MIN_TEXT cells by leaving out the others,
    highest drop order first."""
    shown = list(columns)

    def need(cols: list[tuple[str, list[Any], int]]) -> int:  # fixed columns: content + 2 padding + 1 border
        return sum(max([_cells(v) for v in cells] + [cell_len(name)]) + 3 for name, cells, _ in cols[:-1]) + 4 + MIN_TEXT
    for name, _, _ in sorted((c for c in columns if c[2]), key=lambda c: -c[2]):
        if need(shown) <= width:
            break
        shown = [c for c in shown if c[0] != name]
    return {c[0] for c in shown}


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


def _when_column(table: Table, narrow: bool) -> None:
    """`when (UTC)`: one line on a wide terminal, date over time (10 cells) on a narrow one."""
    table.add_column("when (UTC)", no_wrap=not narrow, width=10 if narrow else None)


def records_table(records: Iterable[MemoryRecord], title: str | None = None, width: int | None = None, wide: bool = False) -> Table:
    """`list`: below WIDE columns chat and who share a column and hits (in `get`) is left out, so
    the text keeps a fair share (at least ~30 cells at 80 columns); on a terminal narrower still,
    chat/who, then when, then type are left out (`fitted`), and the text wraps between words.
    `wide`: every column and the whole text on one line."""
    records = list(records)
    width = UNLIMITED if wide else width or terminal_width()
    narrow = width < WIDE
    table = Table(title=literal(title) if title else None, show_lines=False)
    rows = [(str(r.id), r.memory_type.value, when(r.ts).replace(" ", "\n") if narrow else when(r.ts),
             f"{short(r.chat_id, 12)}\n{short(r.who, 12)}") for r in records]
    keep = fitted(width, [("id", [r[0] for r in rows], 0), ("type", [r[1] for r in rows], 1),
                          ("when (UTC)", [r[2] for r in rows], 2), ("chat / who", [r[3] for r in rows], 3 if narrow else 0),
                          ("text", [], 0)])
    table.add_column("id", justify="right", no_wrap=True)
    if "type" in keep:
        table.add_column("type", no_wrap=True)
    if "when (UTC)" in keep:
        _when_column(table, narrow)
    if not narrow:
        table.add_column("chat", no_wrap=True)
        table.add_column("who", no_wrap=True)
        table.add_column("hits", justify="right")
    elif "chat / who" in keep:
        table.add_column("chat / who", no_wrap=True, max_width=12, overflow="ellipsis")
    table.add_column("text", min_width=min(20, MIN_TEXT), ratio=None if wide else 1, overflow="fold")  # fold: only a word longer than the column
    for r, (rid, kind, _at, chat_who) in zip(records, rows):
        cells: list[Any] = [rid] + ([kind] if "type" in keep else []) + ([when(r.ts)] if "when (UTC)" in keep else [])
        if not narrow:
            cells += [literal(short(r.chat_id, 16) if not wide else r.chat_id), literal(short(r.who, 16) if not wide else r.who), str(r.hit_count)]
        elif "chat / who" in keep:
            cells.append(literal(chat_who))
        text = " ".join(r.text.split()) if wide else short(r.text)
        said = slots_line(r)
        table.add_row(*cells, literal(f"{text}\n{said}" if said else text))
    return table


def slots_line(record: MemoryRecord) -> str:
    """The memory's slots as `list` shows them under its text (docs/slots.md): "user.home=denver
    sister.home=lyon", a value taken back as "user.employer!=deloitte"; "" when it states none."""
    out = []
    for s in record.metadata.get("statements") or []:
        if isinstance(s, dict) and s.get("attribute"):
            value = f"={s['value']}" if s.get("value") else f"!={s.get('old')}"
            out.append(f"{s.get('subject', 'user')}.{s['attribute']}{value}")
    return " ".join(out)


def hits_table(result: SearchResult, title: str | None = None, rows: int | None = None, width: int | None = None,
               wide: bool = False) -> Table:
    """One ranked list, both kinds together in `SearchResult.all`'s order (scores compare only within
    a kind; where the kinds meet the cosine decides), at most `rows` rows, the kind on each. Below
    WIDE columns the rank column (the row order says it) is left out; narrower still, cosine, when,
    score and type (`fitted`). `wide`: every column and the whole text on one line."""
    width = UNLIMITED if wide else width or terminal_width()
    narrow = width < WIDE
    hits = result.all if rows is None else result.all[:rows]
    table = Table(title=literal(title) if title else None)
    cos = ["" if h.similarity is None else f"{h.similarity:.3f}" for h in hits]
    keep = fitted(width, [("type", [h.memory.memory_type.value for h in hits], 2), ("score", ["0.000"], 4),
                          ("cosine", cos, 5), ("id", [str(h.id) for h in hits], 0),
                          ("when (UTC)", ["2000-01-01" if narrow else "2000-01-01 00:00"], 3), ("text", [], 0)])
    if not narrow:
        table.add_column("#", justify="right")
    for name, justify, nowrap in (("type", "left", True), ("score", "right", False), ("cosine", "right", False), ("id", "right", True)):
        if name in keep:
            table.add_column(name, justify=justify, no_wrap=nowrap)  # type: ignore[arg-type]
    if "when (UTC)" in keep:
        _when_column(table, narrow)
    table.add_column("text", min_width=min(20, MIN_TEXT), ratio=None if wide else 1, overflow="fold")
    for i, hit in enumerate(hits, 1):
        values = {"type": hit.memory.memory_type.value, "score": f"{hit.score:.3f}", "cosine": cos[i - 1], "id": str(hit.id),
                  "when (UTC)": when(hit.memory.ts)}
        rank = [] if narrow else [str(i)]
        cells = [values[k] for k in ("type", "score", "cosine", "id", "when (UTC)") if k in keep]
        table.add_row(*rank, *cells, literal(" ".join(hit.text.split()) if wide else short(hit.text)))
    return table


def record_table(record: MemoryRecord) -> Table:
    """Every field of one memory, metadata included, as a two-column table."""
    table = Table(show_header=False, title=f"memory {record.id}")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    data = record.model_dump(mode="json")
    meta = data.pop("metadata", {})
    for key, value in data.items():
        shown = when(value) if key in ("ts", "created_at", "updated_at") and value is not None else value
        table.add_row(key, literal(shown))
    for key, value in sorted(meta.items()):
        table.add_row(literal(f"metadata.{key}"), literal(value if isinstance(value, str) else dumps(value)))
    return table


def history_table(events: Iterable[HistoryEvent], memory_id: int, width: int | None = None) -> Table:
    """A memory's events; below WIDE columns the event and who did it share a column; below COMPACT
    the event (id, action, by, when) is one column and the old and new text one more, "was:" over
    "now:", so that the words keep a fair share at 40 columns."""
    width = width or terminal_width()
    narrow = width < WIDE
    table = Table(title=f"history of memory {memory_id}")
    if width < COMPACT:
        table.add_column("event", no_wrap=True)
        table.add_column("change", ratio=1, min_width=min(20, MIN_TEXT), overflow="fold")
        for e in events:
            at = when(e.at).replace(" ", "\n")
            change = _new_column(e) if e.old_text is None or e.old_text == e.new_text else \
                f"was: {short(e.old_text, 40)}\nnow: {short(e.new_text or '', 40)}"
            table.add_row(literal(f"{e.event_id or ''} {e.action.value}\n{short(e.actor, 12)}\n{at}"), literal(change))
        return table
    table.add_column("event id", justify="right", no_wrap=True)  # what `hippocampus undo` takes
    _when_column(table, narrow)
    if narrow:
        table.add_column("event / by", no_wrap=True, max_width=16, overflow="ellipsis")
    else:
        table.add_column("event", no_wrap=True)
        table.add_column("by", no_wrap=True)
    table.add_column("old text", ratio=1, overflow="fold")
    table.add_column("new text", ratio=1, overflow="fold")
    for e in events:
        acts = [literal(f"{e.action.value}\n{e.actor}")] if narrow else [e.action.value, literal(e.actor)]
        table.add_row(str(e.event_id or ""), when(e.at), *acts, literal(short(e.old_text or "", 40)),
                      literal(_new_column(e)))
    return table


def _new_column(event: HistoryEvent) -> str:
    """The new text, or what changed when the text did not (a curate, a metadata update)."""
    if event.old_text is None or event.old_text != event.new_text:
        return short(event.new_text or "", 40)
    changes = [f"{key}: {a} -> {b}" for key, (a, b) in (event.details.get("lifecycle") or {}).items()]
    changes += [f"metadata {key}" for key in sorted((event.details.get("metadata") or {}).get("before") or {})]
    changes += [f"metadata {key}" for key in (event.details.get("metadata") or {}).get("absent") or []]
    return "same text; " + ("; ".join(changes) or "no visible change")


def stats_table(stats: dict[str, Any]) -> Table:
    table = Table(show_header=False, title="store")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    for key, value in stats.items():
        if key != "service":  # a service's own figures get a table of their own
            table.add_row(literal(key), literal(value))
    return table


def endpoints_table(service: dict[str, Any]) -> Table:
    """A service's requests per endpoint with p50/p99 latency (from its Prometheus histograms)."""
    table = Table(title=literal(f"service {service.get('version', '')}, up {service.get('uptime_s', 0):.0f} s"))
    for name, justify in (("endpoint", "left"), ("requests", "right"), ("errors", "right"), ("p50 ms", "right"), ("p99 ms", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for endpoint, row in service.get("endpoints", {}).items():
        table.add_row(literal(endpoint), f"{row['requests']:.0f}", f"{row['errors']:.0f}", f"{row['p50_ms']:.1f}", f"{row['p99_ms']:.1f}")
    return table


def error_line(exc: BaseException) -> str:
    """One line for a terminal: the error's class and message, pydantic's multi-line detail folded."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    kept = [ln for ln in lines if ln and not ln.startswith("For further information")]
    return f"{type(exc).__name__}: {' | '.join(kept) or 'failed'}"


def err_console() -> Console:
    return console(stderr=True)


def error(exc: BaseException, line: str | None = None) -> Text:
    """`error: <Class>: message` for stderr, the message (which may quote user input) shown literally."""
    return Text.assemble(("error:", "red"), " ", literal(line if line is not None else error_line(exc)))
