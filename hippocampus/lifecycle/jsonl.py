"""One memory per JSON line, for backups and for moving memories between stores: every field of the
record (metadata and its lifecycle included) plus the memory's history under the key "history".
Pure: no store, no file; transfer_verbs.py reads and writes the lines.

    {"id": 12, "user_id": "alice", "memory_type": "semantic", "ts": ..., "text": "...",
     "metadata": {"life": {...}, ...}, ..., "history": [{"action": "created", "at": ..., ...}]}
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from pydantic import ValidationError

from ..models import HistoryEvent, MemoryRecord

HISTORY_KEY = "history"


def dump_line(record: MemoryRecord, events: Sequence[HistoryEvent]) -> str:
    """The record and its history as one JSON line (no newline at the end); UTF-8 text kept as is."""
    data = record.model_dump(mode="json")
    data[HISTORY_KEY] = [e.model_dump(mode="json") for e in events]
    return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def load_line(line: str, lineno: int) -> tuple[dict[str, Any], list[HistoryEvent]]:
    """The record (as MemoryRecord's JSON dict, checked) and its history events from one line.

    Raises ValueError naming `lineno` for a line that is not a JSON object of a memory."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:  # nested deeper than the parser's stack: far beyond what metadata may hold
        raise ValueError(f"line {lineno}: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise ValueError(f"line {lineno}: expected a JSON object of one memory, got {type(data).__name__}")
    raw_events = data.pop(HISTORY_KEY, [])
    if not isinstance(raw_events, list):
        raise ValueError(f"line {lineno}: {HISTORY_KEY!r} must be a list of events")
    try:
        record = MemoryRecord.model_validate(data)
        events = [HistoryEvent.model_validate(e) for e in raw_events]
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'memory'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"line {lineno}: {problems}") from None
    return record.model_dump(mode="json"), events
