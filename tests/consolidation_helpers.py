"""Helpers for the consolidation tests: the shipped scripted chat model with scripted answers per
result schema, and records with chosen vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hippocampus.models import ts_to_iso
from hippocampus.testing import ScriptedChatModel

Reply = Callable[[dict[str, Any]], "str | BaseException"]


def scripted_chat(replies: dict[str, Reply] | None = None) -> ScriptedChatModel:
    """The shipped ScriptedChatModel configured for these tests: replies per result schema (over
    DEFAULTS), "{}" for an unscripted schema, one try a call (a responder's side effects run once)."""
    return ScriptedChatModel(replies={**DEFAULTS, **(replies or {})}, default="{}", attempts=1)


def merge_union(inputs: dict[str, Any]) -> str:
    """A scripted Merger that says 'same event' and keeps both texts."""
    import json

    a, b = inputs["memory_a"], inputs["memory_b"]
    return json.dumps({"same_event": True, "text": f"{a['text']} / {b['text']}", "context": "", "thing": "", "reason": "scripted"})


def merge_never(inputs: dict[str, Any]) -> str:
    return '{"same_event": false, "text": "", "context": "", "thing": "", "reason": "different events"}'


def separate_tagged(inputs: dict[str, Any]) -> str:
    import json

    a, b = inputs["memory_a"], inputs["memory_b"]
    return json.dumps({"text_a": f"{a['text']} (A)", "text_b": f"{b['text']} (B)", "context_a": "a", "context_b": "b", "reason": "scripted"})


DEFAULTS: dict[str, Reply] = {
    "MergeResult": merge_never,
    "SeparationResult": separate_tagged,
    "SemanticExtraction": lambda _i: '{"facts": []}',
    "WriteDecision": lambda _i: '{"write_episodic": true, "context": "", "thing": "", "time": "", "who": ""}',
}


def vector_pair(similarity: float, dim: int = 8, seed: int = 0) -> tuple[list[float], list[float]]:
    """Two unit vectors whose cosine is `similarity`."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=dim)
    a /= np.linalg.norm(a)
    u = rng.normal(size=dim)
    u -= u.dot(a) * a
    u /= np.linalg.norm(u)
    b = similarity * a + np.sqrt(max(0.0, 1 - similarity**2)) * u
    return a.tolist(), (b / np.linalg.norm(b)).tolist()


def episode_row(user_id: str, text: str, vector: Sequence[float], ts: int, chat_id: str = "c1", who: str | None = None,
                **meta: Any) -> dict[str, Any]:
    """A stored episodic row as Memory.add writes it, with a chosen vector."""
    who = who or user_id
    return {
        "user_id": user_id,
        "memory_type": "episodic",
        "ts": ts,
        "chat_id": chat_id,
        "who": who,
        "text": text,
        "hit_count": 0,
        "metadata": {"context": "", "thing": text, "time": ts_to_iso(ts), "chatid": chat_id, "who": who, **meta},
        "vector": list(vector),
    }
