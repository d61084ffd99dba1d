"""The record a consolidation merge writes in place of two episodes (pure: no store, no model)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from ..lifecycle.policy import merged as merged_life
from ..models import LIFE_KEY, MemoryRecord, MemoryType
from . import rules as R


def merge_key(source_ids: Iterable[int]) -> str:
    """The deterministic key of one merge intent: the same sources give the same key, whichever
    replica or retry judges them, so a second merged record of them is never written."""
    return hashlib.sha256(",".join(str(int(i)) for i in sorted(source_ids)).encode()).hexdigest()[:32]


def distill_key(source_id: int, normalised_fact: str) -> str:
    """The deterministic key of one distilled fact: its source episode and its normalised wording, so
    the same fact distilled from the same episode twice (two replicas, a retry) is written once."""
    return hashlib.sha256(f"{int(source_id)}|{normalised_fact}".encode()).hexdigest()[:32]


def build_merged_row(a: MemoryRecord, b: MemoryRecord, text: str, context: str, thing: str, now: int) -> dict[str, Any]:
    """The record that replaces a and b (without its vector). Pure.

    Keeps the earlier metadata.time, its ts and chat (Property 21), lists both chats in
    source_chat_ids (Property 22) and both ids in merged_from_ids; `who` never changes.
    """
    first, second = (a, b) if R.earlier_of(a, b) is a else (b, a)
    meta: dict[str, Any] = {**second.metadata, **first.metadata}
    for key in ("merge_pending", "pending_decision", "distilled"):
        meta.pop(key, None)
    merged_ids = {a.id, b.id}
    meta.update(
        {
            "context": context or R.dedupe_join(first.metadata.get("context"), second.metadata.get("context")),
            "thing": thing or text,
            "time": first.time_iso,
            "chatid": first.chat_id,
            "who": first.who,
            "source_chat_ids": R.dedupe(R.source_chat_ids(first) + R.source_chat_ids(second)),
            "merged_from_ids": sorted(merged_ids),
            **({R.SOURCE_TURNS: turns} if (turns := R.dedupe(R.turn_ids(first.metadata) + R.turn_ids(second.metadata))) else {}),
            "merge_key": merge_key(merged_ids),
            "updates": list(first.metadata.get("updates") or []) + list(second.metadata.get("updates") or []),
            "separated_from": [
                i for i in R.dedupe(list(a.metadata.get("separated_from") or []) + list(b.metadata.get("separated_from") or []))
                if i not in merged_ids
            ],
            "merge_pending": True,
            LIFE_KEY: merged_life(a.life, b.life, now).stored(),
            "created_at": now,
            "updated_at": now,
        }
    )
    if a.metadata.get("distilled") and b.metadata.get("distilled"):
        meta["distilled"] = True
    merged = MemoryRecord(id=0, user_id=first.user_id, memory_type=MemoryType.EPISODIC, ts=min(a.ts, b.ts), chat_id=first.chat_id,
                          who=first.who, text=text, hit_count=a.hit_count + b.hit_count, metadata=meta)
    return merged.to_row(with_id=False)
