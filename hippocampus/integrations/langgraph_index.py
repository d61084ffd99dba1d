"""The LangGraph store's semantic index (langgraph.py): LangGraph's `index` configuration honoured as
LangGraph defines it, and the similarity a search scores with.

- `index={"dims": ..., "embed": ..., "fields": [...]}` on the store: each field (LangGraph's path
  syntax, `$` the whole value) is embedded on its own with `embed` (an `Embeddings`, a function or a
  provider string, as `langgraph.store.base.embed.ensure_embeddings` takes it); without `index` the
  store's own embedder (the memory's) embeds the item's text (`value_text`). A put's `index=False`
  stores no vector, `index=[...]` names that item's fields instead.
- The vectors live in the item's metadata (`lg_vec`: path -> base64 float32), written with the item
  in the same write; a query is embedded once per batch.
- `score` is the cosine similarity in [-1, 1] between the query and the best of the item's vectors
  (LangGraph's max pooling), the number InMemoryStore and the SQLite store give: a user can
  threshold it. Items with no vector come after the scored ones with `score=None`, as in InMemoryStore.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
from langgraph.store.base import IndexConfig, MatchCondition
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

__all__ = ["Index", "value_text", "cosine_scores", "best_score", "encode_vector", "decode_vector", "compare", "matches", "to_datetime"]

VEC, INDEXED = "lg_vec", "lg_index"


def value_text(value: Mapping[str, Any]) -> str:
    """What is embedded and searched for an item: its "text" or "content" string, else its JSON."""
    for field in ("text", "content"):
        text = value.get(field)
        if isinstance(text, str) and text.strip():
            return text
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def encode_vector(vector: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    vector: np.ndarray = np.frombuffer(base64.b64decode(text), dtype="<f4")
    return vector


def cosine_scores(query: np.ndarray, vectors: Sequence[np.ndarray | Sequence[float]]) -> list[float]:
    """Cosine of `query` with each vector (0.0 where either is the zero vector or the dimensions differ)."""
    q = np.asarray(query, dtype=np.float64)
    qn = float(np.linalg.norm(q))
    out = []
    for v in vectors:
        v = np.asarray(v, dtype=np.float64)
        vn = float(np.linalg.norm(v))
        out.append(float(q @ v / (qn * vn)) if qn > 0 and vn > 0 and v.shape == q.shape else 0.0)
    return out


def best_score(query: np.ndarray, encoded: Mapping[str, str], extra: Sequence[float] | None = None) -> float | None:
    """LangGraph's max pooling: the best cosine of `query` with an item's stored vectors (`lg_vec`) and
    `extra` (a vector embedded now for an item put before `lg_vec`); None when the item has no vector."""
    vectors: list[np.ndarray | Sequence[float]] = [decode_vector(v) for v in encoded.values()]
    vectors += [extra] if extra is not None else []
    return max(cosine_scores(query, vectors)) if vectors else None


class Index:
    """Which texts of an item are embedded, and with what: the store's `index` config or the memory's embedder."""

    def __init__(self, memory: Any, config: IndexConfig | None) -> None:
        self.memory = memory
        self.config: dict[str, Any] | None = dict(config) if config else None
        self.embeddings = ensure_embeddings(config.get("embed")) if config and config.get("embed") is not None else None
        fields = (config or {}).get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"index fields must be a list of paths, got {fields!r}")
        self.fields = [(p, p if p == "$" else tokenize_path(p)) for p in fields]

    def texts(self, value: Mapping[str, Any], index: Any) -> list[tuple[str, str]] | None:
        """(path, text) pairs to embed for a put; None when the put asked for no index (`index=False`)."""
        if index is False:
            return None
        if index is None:
            paths = self.fields
        elif isinstance(index, (list, tuple)) and all(isinstance(p, str) for p in index):
            paths = [(p, tokenize_path(p)) for p in index]
        else:
            raise ValueError(f"index must be False, None or a list of field paths, got {index!r}")
        out: list[tuple[str, str]] = []
        for path, tokens in paths:
            if tokens == "$" and self.config is None:
                out.append(("$", value_text(value)))  # the store's own text, as the memory embeds it
                continue
            found = get_text_at_path(dict(value), tokens)
            out += [(f"{path}.{i}" if len(found) > 1 else path, text) for i, text in enumerate(found)]
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One embedding call for all the texts of a batch."""
        if not texts:
            return []
        if self.embeddings is not None:
            return [list(map(float, v)) for v in self.embeddings.embed_documents(texts)]
        vectors = np.asarray(self.memory.embedder.encode(texts, role="passage"), dtype=np.float32)
        return [[float(x) for x in v] for v in vectors]

    def embed_queries(self, queries: list[str]) -> dict[str, np.ndarray]:
        if not queries:
            return {}
        if self.embeddings is not None:
            return {q: np.asarray(self.embeddings.embed_query(q), dtype=np.float32) for q in queries}
        vectors = np.asarray(self.memory.embedder.encode(queries, role="query"), dtype=np.float32)
        return dict(zip(queries, vectors))

    def vectors(self, puts: list[tuple[Mapping[str, Any], Any]]) -> list[dict[str, str] | None]:
        """Per put (value, index): {path: encoded vector}, or None when not indexed; one embedding call."""
        plan = [self.texts(value, index) for value, index in puts]
        flat = [text for pairs in plan if pairs for _path, text in pairs]
        embedded = iter(self.embed_documents(flat))
        return [None if pairs is None else {path: encode_vector(next(embedded)) for path, _text in pairs} for pairs in plan]


# ---------------------------------------------------------------- LangGraph's filter and namespace rules
def to_datetime(epoch: int | None) -> datetime:
    return datetime.fromtimestamp(epoch or 0, tz=timezone.utc)


def compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter rule (as InMemoryStore): exact match, nested objects, $eq $ne $gt $gte $lt $lte."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(actual, op, arg) for op, arg in wanted.items())
        return isinstance(actual, dict) and all(compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(wanted)
                and all(compare(a, w) for a, w in zip(actual, wanted)))
    return bool(actual == wanted)


def _operator(actual: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(actual == arg)
    if op == "$ne":
        return bool(actual != arg)
    checks = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}
    if op not in checks:
        raise ValueError(f"unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        return actual is not None and bool(checks[op](actual, arg))
    except TypeError:
        return False


def matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))


