"""The assistant's memory of a turn (issue 55): when add(infer=True) is given an exchange with the assistant's
reply, a recommendation, a list, a plan or an answer in it is kept as a memory of its own (text/assistant.py
says which), so "what did you recommend?" finds it. Before, the reply lived only in the user memory's
metadata, which search does not read.

The memory is episodic, `who` "assistant", its metadata `said_by: assistant` and `assistant_kind`; it states
no slot of the user's (its statements are empty), so nothing the assistant said supersedes what the user said.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from ..context import MemoryContext
from ..lifecycle.rows import new_row
from ..models import AddResult, MemoryType
from ..text import slots
from ..text.assistant import kept

WHO = "assistant"


def keep_assistant(ctx: MemoryContext, user_id: str, chat_id: str, metadata: dict[str, Any], ts: int,
                   turns: Sequence[dict[str, str]], tz: tzinfo) -> list[int]:
    """Write the assistant's memories of this exchange; their ids (none for chit-chat or no assistant turn)."""
    found = kept(turns) if any(t.get("role") == WHO for t in turns) else []
    rows = [new_row(user_id, MemoryType.EPISODIC, ts, chat_id, WHO, m.text,
                    {**metadata, "said_by": WHO, "assistant_kind": m.kind, slots.KEY: []},
                    said_ts=ts, tz=tz, declared=ctx.config.categories) for m in found]
    return ctx.writer.insert(rows, actor="assistant_turn") if rows else []


def with_assistant(added: AddResult, ids: list[int]) -> AddResult:
    """The add's result with the assistant's memories among its ids."""
    if not ids:
        return added
    return added.model_copy(update={"ids": [*added.ids, *ids], "stored": True,
                                    "reason": f"{added.reason}; kept what the assistant said as memory {ids}"})
