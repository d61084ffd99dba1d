"""MEMORY.md: a person-readable, person-editable view of one user's memories (the store stays the
truth; the file is a view for export and import). `render` and `parse` are pure; `load` and `save` add the file.

    # Agent Memory

    <!-- Last updated: 2026-02-20T10:30:00 -->
    <!-- Total entries: 2 -->

    ## Active Memories

    ### [1234] preference | 0.92 | 2026-02-20 | 12
    <!-- type: semantic -->
    The user likes concise code with few comments

    ## Archived Memories

    ### [new] fact | 0.18 | 2026-01-10 | 2
    The user once tried Vue for a frontend

The heading is exactly the format's: `### [id] category | score | last_activated | hits`, the score
with two decimals, the date in UTC, hits = activation_count. `[new]` or `[]` is an entry a person
wrote; an id of another tool that is no number (`[a1b2c3]`) reads as new too, with a warning.

memory_type: the format has no field for it and the category does not decide it, so it rides on an
optional HTML comment, `<!-- type: episodic -->` or `<!-- type: semantic -->`, on the line right
under the heading (invisible in rendered Markdown). `render` writes it whenever it is known;
without it `MdEntry.memory_type` is None.

Escaping, so that any text round-trips exactly: lines are split on "\\n" only, and a line is
structure only where it starts at column 0 with `#` (title, `## section`, `### entry`). A text line
that starts with `#` or `<!--` after any number of backslashes gets one more backslash in front
(`### x` -> `\\### x`, `\\### x` -> `\\\\### x`), which Markdown shows as the plain text; `parse`
drops exactly one. Other lines, `|` included, are written as they are. Texts are stripped.

Tolerant parsing: a damaged entry (bad heading, unknown category, a score
outside [0, 1], bad date or hits, empty text) is skipped with a warning naming its line number;
the other entries load. Lines outside any entry (other than comments) are ignored with a warning.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from datetime import date, datetime, timezone
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from ..lifecycle.policy import DecayRule, score_of
from ..models import AnyCategory, Category, CustomCategory, MemoryRecord, MemoryType, State
from ..models.base import Model
from .files import save as save  # the file a MEMORY.md is written to: files.py, which the Client uses too

Section = Literal["active", "archived"]
TITLE = "# Agent Memory"
SECTIONS: dict[str, str] = {"active": "## Active Memories", "archived": "## Archived Memories"}
NEW_IDS = ("", "new")  # what a person writes in the brackets for a new entry
_HEADING = re.compile(r"^###\s*\[(?P<id>[^\]]*)\]\s*(?P<rest>.*)$")
_TYPE = re.compile(r"^<!--\s*type:\s*(?P<type>.*?)\s*-->\s*$")
_NEEDS_ESCAPE = re.compile(r"^\\*(#|<!--)")
_ESCAPED = re.compile(r"^\\+(#|<!--)")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_STAMP = re.compile(r"^<!--\s*Last updated:\s*(?P<at>[^ ]+?)\s*-->\s*$", re.MULTILINE)
_INT64_MAX = 2**63 - 1
SKIPPED = "entry skipped"  # the end of every warning about an entry that was not loaded


class MdEntry(Model):
    """One `###` entry as the file shows it; `line` is where `parse` found its heading (0 otherwise)."""

    id: int | None = Field(None, ge=0, le=_INT64_MAX)
    category: AnyCategory = Field(union_mode="left_to_right")  # a built-in one, or a project's own (MemoryConfig.categories)
    score: float = Field(ge=0.0, le=1.0)
    last_activated: date
    hits: int = Field(0, ge=0)
    text: str
    section: Section = "active"
    memory_type: MemoryType | None = None
    line: int = 0

    @field_validator("score", mode="before")
    @classmethod
    def _two_decimals(cls, value: object) -> float:
        """The file shows two decimals: an entry holds the score as shown, so render -> parse is exact."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"score must be a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"score must be a number between 0 and 1, got {value!r}")
        return float(f"{number:.2f}") + 0.0  # + 0.0: no "-0.00"

    @field_validator("text")
    @classmethod
    def _stripped(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the entry has no text")
        return value


def _escape(line: str) -> str:
    return "\\" + line if _NEEDS_ESCAPE.match(line) else line


def _unescape(line: str) -> str:
    return line[1:] if _ESCAPED.match(line) else line


def _utc(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def heading(entry: MdEntry) -> str:
    """`### [id] category | score | YYYY-MM-DD | hits`."""
    shown_id = "new" if entry.id is None else str(entry.id)
    return (f"### [{shown_id}] {entry.category.value} | {entry.score:.2f} | "
            f"{entry.last_activated.isoformat()} | {entry.hits}")


def render(entries: Iterable[MdEntry], now: int) -> str:
    """The whole file (every save rewrites it): Active then Archived, each by score, highest first
    (ties keep the given order); `now` (epoch seconds) is the "Last updated" stamp."""
    entries = list(entries)
    out = [TITLE, "", f"<!-- Last updated: {_utc(now).strftime('%Y-%m-%dT%H:%M:%S')} -->",
           f"<!-- Total entries: {len(entries)} -->", ""]
    for section, title in SECTIONS.items():
        out += [title, ""]
        for entry in sorted((e for e in entries if e.section == section), key=lambda e: -e.score):
            out.append(heading(entry))
            if entry.memory_type is not None:
                out.append(f"<!-- type: {entry.memory_type.value} -->")
            out += [_escape(line) for line in entry.text.split("\n")]
            out.append("")
    return "\n".join(out)


def parse(text: str, categories: Iterable[str] = ()) -> tuple[list[MdEntry], list[str]]:
    """Entries in file order and warnings ("line N: ..."); never raises on content. A category is a built-in
    one or one of `categories` (the project's own, MemoryConfig.categories); another is a damaged entry."""
    declared = set(categories)
    if "\r\n" in text and "\n" not in text.replace("\r\n", ""):
        text = text.replace("\r\n", "\n")  # a file an editor saved with CRLF throughout
    entries: list[MdEntry] = []
    warnings: list[str] = []
    section: Section = "active"
    block: tuple[int, str, list[str]] | None = None

    def flush() -> None:
        if block is not None:
            entry = _entry(*block, section=section, warnings=warnings)
            if entry is not None and isinstance(entry.category, CustomCategory) and entry.category not in declared:
                warnings.append(f"line {block[0]}: unknown category {entry.category.value!r}; {SKIPPED}")
            elif entry is not None:
                entries.append(entry)

    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("###"):
            flush()
            block = (n, line, [])
        elif line.startswith("#"):
            flush()
            block = None
            if line.startswith("##"):
                name = line.lstrip("#").strip().lower()
                found = next((s for s in SECTIONS if name.startswith(s)), None)
                if found is None:
                    warnings.append(f"line {n}: unknown section {line.strip()!r}; its entries are read as active")
                section = found or "active"
        elif block is not None:
            block[2].append(line)
        elif line.strip() and not _COMMENT.match(line):
            warnings.append(f"line {n}: text outside any ### entry, ignored")
    flush()
    return entries, warnings


def stamp(text: str) -> int | None:
    """The "Last updated" time of a rendered file (epoch seconds, UTC), None when absent or damaged:
    an import compares a shown score with the score at that time, so decay since is no edit."""
    m = _STAMP.search(text)
    try:
        return int(datetime.fromisoformat(m["at"]).replace(tzinfo=timezone.utc).timestamp()) if m else None
    except (ValueError, OverflowError):
        return None


def _entry(n: int, head: str, body: list[str], section: Section, warnings: list[str]) -> MdEntry | None:
    """One block, or None with a warning naming line `n`."""
    m = _HEADING.match(head.strip())
    parts = [p.strip() for p in m["rest"].split("|")] if m else []
    if m is None or len(parts) != 4:
        warnings.append(f"line {n}: not a memory heading ('### [id] category | score | YYYY-MM-DD | hits'); {SKIPPED}")
        return None
    raw_id = m["id"].strip()
    memory_id: int | None = None
    if raw_id.isdigit() and raw_id.isascii():
        memory_id = int(raw_id)
    elif raw_id.lower() not in NEW_IDS:
        warnings.append(f"line {n}: id {raw_id!r} is not a hippocampus id; read as a new entry")
    memory_type = None
    t = _TYPE.match(body[0]) if body else None
    if t is not None:
        try:
            memory_type = MemoryType(t["type"].lower())
        except ValueError:
            warnings.append(f"line {n + 1}: unknown type {t['type']!r} (episodic or semantic); {SKIPPED}")
            return None
        body = body[1:]
    category, score, day, hits = parts
    try:
        return MdEntry(id=memory_id, category=category, score=score, last_activated=day, hits=hits,
                       text="\n".join(_unescape(line) for line in body), section=section,
                       memory_type=memory_type, line=n)
    except ValueError as exc:
        warnings.append(f"line {n}: {_reason(exc)}; {SKIPPED}")
        return None


def _reason(exc: ValueError) -> str:
    """A pydantic error as one short phrase per field."""
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
    return str(exc)


def load(path: str | os.PathLike[str]) -> tuple[list[MdEntry], list[str]]:
    """`parse` of a file; a missing file (or an empty one) is no entries and no warning."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return parse(f.read())
    except FileNotFoundError:
        return [], []


def md_entry(record: MemoryRecord, now: int, table: dict[Category, DecayRule]) -> MdEntry:
    """A memory as the MEMORY.md entry that shows it at `now` (its score under `table`)."""
    life = record.life
    return MdEntry(id=record.id, category=life.category, score=score_of(life, now, table),
                   last_activated=datetime.fromtimestamp(life.last_activated, tz=timezone.utc).date(),
                   hits=life.activation_count, text=record.text,
                   section="archived" if life.state is State.ARCHIVED else "active", memory_type=record.memory_type)
