"""Helpers for the consolidation tests: a tiny deterministic embedder, a scripted chat model
that parses and validates replies exactly like LLMClient, and records with chosen vectors."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

import numpy as np
from pydantic import BaseModel, ValidationError

from hippocampus.errors import LLMError
from hippocampus.llm import Prompt, extract_json
from hippocampus.models import ts_to_iso

Reply = Callable[[dict[str, Any]], "str | BaseException"]


class HashEmbedder:
    """8-d unit vectors from a hash of the text: deterministic, instant, no model."""

    def __init__(self, dim: int = 8):
        self._dim = dim
        self.model_name = f"test-hash-{dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            v = np.random.default_rng(seed).normal(size=self._dim)
            out[i] = v / np.linalg.norm(v)
        return out


class ScriptedChat:
    """A ChatModel whose replies are scripted per result schema (MergeResult, SeparationResult, ...).

    Replies are raw strings parsed with the real client's `extract_json` and validated with
    `schema.model_validate`; an unusable reply or a scripted exception becomes an LLMError,
    as LLMClient raises after its retries. Unscripted schemas get `defaults`.
    """

    model = "scripted"

    def __init__(self, replies: dict[str, Reply] | None = None):
        self.replies: dict[str, Reply] = dict(replies or {})
        self.calls: list[str] = []
        self.prompts: list[Prompt] = []

    def chat(self, system: str, user: str) -> str:
        raise LLMError(self.model, 1, "free chat is not scripted")

    def chat_json(self, prompt: Prompt, schema: type[BaseModel]) -> Any:
        self.calls.append(schema.__name__)
        self.prompts.append(prompt)
        reply = self.replies.get(schema.__name__, DEFAULTS.get(schema.__name__, lambda _i: "{}"))(prompt.inputs)
        if isinstance(reply, BaseException):
            raise LLMError(self.model, 1, reply)
        try:
            return schema.model_validate(extract_json(reply))
        except (ValueError, ValidationError) as exc:
            raise LLMError(self.model, 1, exc) from exc

    def count(self, schema_name: str) -> int:
        return self.calls.count(schema_name)


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
