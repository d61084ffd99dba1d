"""One memory per JSON line, for backups and for moving memories between stores: every field of the
record (metadata and its lifecycle included) plus the memory's history under the key "history".
Pure: no store, no file; transfer/service.py reads and writes the lines.

    {"id": 12, "user_id": "alice", "memory_type": "semantic", "ts": ..., "text": "...",
     "metadata": {"life": {...}, ...}, ..., "history": [{"action": "created", "at": ..., ...}],
     "source_hash": "sha256:..."}

`source_hash` (issue 31, item 4) is a content hash of what a memory says and where it comes from
(text, kind, time, chat, who and the caller's metadata; none of the library's bookkeeping, which
changes with use), so that a second import of the same file finds what the first one stored. An
import computes it again from the entry (an older export has none; an edited entry gets a new one).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from ..models import HistoryEvent, MemoryRecord
from ..validation import OWNED_KEYS

HISTORY_KEY = "history"
HASH_KEY = "source_hash"  # in an exported line, and in the metadata of a memory an import stored
_NOT_CONTENT = frozenset({*OWNED_KEYS, HASH_KEY, "last_used_at"}) - {"agent_id", "run_id"}  # bookkeeping that moves with use
# (an agent and run are content: the same words from two agents are two memories, docs/agents.md)


def content_hash(text: str, memory_type: str, ts: int, chat_id: str, who: str, metadata: Mapping[str, Any]) -> str:
    """The source hash of one memory: equal for the same content, whatever its id, store or use since."""
    mine = {k: v for k, v in metadata.items() if k not in _NOT_CONTENT}
    payload = json.dumps([text.strip(), memory_type, int(ts), chat_id, who, mine], sort_keys=True, ensure_ascii=False,
                         separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def record_hash(record: MemoryRecord) -> str:
    """`content_hash` of a stored memory as it is now."""
    return content_hash(record.text, record.memory_type.value, record.ts, record.chat_id, record.who, record.metadata)


def row_hash(row: Mapping[str, Any]) -> str:
    """`content_hash` of a row about to be inserted (transfer/service.py's restored rows)."""
    return content_hash(row["text"], row["memory_type"], row["ts"], row["chat_id"], row["who"], row.get("metadata") or {})


def text_hash(text: str) -> str:
    """The hash a MEMORY.md `[new]` entry is stored under: its text is all that the file says of it."""
    return "md:sha256:" + hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


def dump_line(record: MemoryRecord, events: Sequence[HistoryEvent]) -> str:
    """The record and its history as one JSON line (no newline at the end); UTF-8 text kept as is."""
    data = record.model_dump(mode="json")
    data[HISTORY_KEY] = [e.model_dump(mode="json") for e in events]
    data[HASH_KEY] = record_hash(record)
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
    data.pop(HASH_KEY, None)  # informative only: the import computes it again from what the line says
    if not isinstance(raw_events, list):
        raise ValueError(f"line {lineno}: {HISTORY_KEY!r} must be a list of events")
    try:
        record = MemoryRecord.model_validate(data)
        events = [HistoryEvent.model_validate(e) for e in raw_events]
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'memory'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"line {lineno}: {problems}") from None
    return record.model_dump(mode="json"), events
