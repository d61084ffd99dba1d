"""Where an Agents SDK session's items live: in the Hippocampus store, under the session's id, so a new
session object, another process or a restart sees the conversation (the SDK's `SQLiteSession` contract).

Each session is one reserved pseudo-user, `oa-session:<hash of user_id and session_id>`, never a
real user's memories (their search, prompt block and extraction never see the items). An item is
its JSON as the memory text (`memory_type="procedural"`), split into parts when longer than a
memory's text may be; metadata keeps its place (`oa_seq`, `oa_part`, `oa_parts`). One more memory
of that pseudo-user, `oa_state`, keeps how many items went to extraction and whether the session
ended, so a restarted session neither extracts a message twice nor reopens an ended session.

Only the `Memory` facade is used. Writes from two processes on the same session at once are not
ordered against each other (as two writers of one SQLite file without a transaction would not be).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..models import MemoryRecord

__all__ = ["SessionItems", "pseudo_user"]

SEQ, PART, PARTS, STATE = "oa_seq", "oa_part", "oa_parts", "oa_state"
PART_CHARS = 16000  # at most 64,000 UTF-8 bytes a part: under a memory text's 65,535
CHAT = "agents-session"


def pseudo_user(user_id: str, session_id: str) -> str:
    """The reserved user id a session's items are stored under (fits the 128-byte id limit)."""
    digest = hashlib.sha256(f"{user_id}\x00{session_id}".encode()).hexdigest()[:32]
    return f"oa-session:{digest}"


def _plain(item: Any) -> Any:
    """An item as JSON-ready data (the SDK's items are dicts; a pydantic model is dumped)."""
    if hasattr(item, "model_dump"):
        return item.model_dump(exclude_unset=True, mode="json")
    return item


class SessionItems:
    """The persisted items of one session: read, append, pop, clear; plus its extraction state."""

    def __init__(self, memory: Any, user_id: str, session_id: str) -> None:
        self.memory = memory
        self.owner = pseudo_user(user_id, session_id)
        self.meta = {"oa_user": user_id, "oa_session": session_id}

    def _records(self) -> list[MemoryRecord]:
        return list(self.memory.get_all(self.owner, include_expired=True))

    def _grouped(self) -> tuple[dict[int, list[MemoryRecord]], MemoryRecord | None]:
        groups: dict[int, list[MemoryRecord]] = {}
        state = None
        for record in self._records():
            if record.metadata.get(STATE):
                state = record
            elif SEQ in record.metadata:
                groups.setdefault(int(record.metadata[SEQ]), []).append(record)
        return groups, state

    @staticmethod
    def _decode(parts: list[MemoryRecord]) -> Any:
        parts = sorted(parts, key=lambda r: int(r.metadata.get(PART, 0)))
        return json.loads("".join(r.text for r in parts))

    def load(self) -> list[Any]:
        """Every item, oldest first."""
        groups, _ = self._grouped()
        return [self._decode(groups[seq]) for seq in sorted(groups)]

    def latest(self, limit: int) -> list[Any]:
        """The newest `limit` items, oldest first."""
        if limit <= 0:
            return []
        groups, _ = self._grouped()
        return [self._decode(groups[seq]) for seq in sorted(groups)[-limit:]]

    def append(self, items: list[Any]) -> None:
        """Store `items` after the last one, in order, in one batched write (add_many)."""
        if not items:
            return
        groups, _ = self._grouped()
        seq = max(groups, default=-1) + 1
        rows = []
        for item in items:
            text = json.dumps(_plain(item), ensure_ascii=False, separators=(",", ":"))
            chunks = [text[i:i + PART_CHARS] for i in range(0, len(text), PART_CHARS)]
            for n, chunk in enumerate(chunks):
                rows.append({"text": chunk, "user_id": self.owner, "chat_id": CHAT, "memory_type": "procedural",
                             "metadata": {**self.meta, SEQ: seq, PART: n, PARTS: len(chunks)}})
            seq += 1
        self.memory.add_many(rows)

    def pop(self) -> Any | None:
        """Remove and return the newest item; None when there is none."""
        groups, _ = self._grouped()
        if not groups:
            return None
        parts = groups[max(groups)]
        item = self._decode(parts)
        self.memory.delete_many([r.id for r in parts], self.owner)
        return item

    def count(self) -> int:
        groups, _ = self._grouped()
        return len(groups)

    def clear(self) -> None:
        """Erase the items and the state for good (Memory.reset of the pseudo-user)."""
        self.memory.reset(self.owner)

    def state(self) -> dict[str, Any]:
        """{"handed": items that went to extraction, "ended": bool}."""
        _, record = self._grouped()
        meta = record.metadata if record is not None else {}
        return {"handed": int(meta.get("oa_handed", 0)), "ended": bool(meta.get("oa_ended", False))}

    def save_state(self, handed: int, ended: bool) -> None:
        _, record = self._grouped()
        meta = {**self.meta, STATE: True, "oa_handed": handed, "oa_ended": ended}
        if record is None:
            self.memory.add("session state", user_id=self.owner, chat_id=CHAT, metadata=meta, memory_type="procedural")
        elif record.metadata.get("oa_handed") != handed or record.metadata.get("oa_ended") != ended:
            self.memory.update(record.id, record.text, user_id=self.owner, metadata=meta)
