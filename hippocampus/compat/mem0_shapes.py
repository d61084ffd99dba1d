"""mem0 v3's shapes, translated both ways (docs/mem0.md): its `filters` (the entity ids inside them, every other
key a metadata key, `categories`, `"*"`) into the native filter and user; its messages into turns; a
MemoryRecord or a HistoryEvent into mem0's result dicts. Pure functions: compat/mem0.py does the calls."""

from __future__ import annotations

import hashlib
from datetime import date, datetime, timezone
from typing import Any

from ..errors import InvalidInput
from ..models import HistoryAction, HistoryEvent, MemoryRecord, SearchHit
from ..store.filters import LIBRARY_KEYS

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
IMMUTABLE_KEYS = (*ENTITY_KEYS, "actor_id", "role")  # set when a memory is added; mem0's update keeps them
# mem0 clears an expiry; the library keeps one key per expiry, so "never" is the last second it can hold (year 9999),
# shown to mem0's caller as no expiration_date.
NEVER = 253402300799
COMBINATORS = ("AND", "OR", "NOT")
DATE_KEYS = ("created_at", "updated_at")
# A memory written without a user_id (only an agent_id or a run_id) lives under a user named after that id. mem0 refuses
# ids with inner whitespace, so "agent_id bot" can never be a mem0 user's own id.
_SCOPE_KEYS = ("agent_id", "run_id")
# Metadata the library writes, or mem0 shows at the top level of a result instead of under "metadata".
_NOT_CALLERS = frozenset({*LIBRARY_KEYS, "life", "chatid", "who", "said_at", "write_reason", "event_time", "agent_id",
                          "run_id", "role", "actor_id", "expires_at", "named_date", "procedure"})
# Keys the library writes into a memory's metadata itself: a caller's key of that name could be neither kept nor shown.
LIBRARY_ONLY = _NOT_CALLERS - set(IMMUTABLE_KEYS)
_EVENTS = {HistoryAction.CREATED: "ADD", HistoryAction.UPDATED: "UPDATE", HistoryAction.DELETED: "DELETE",
           HistoryAction.FORGOTTEN: "DELETE"}
# The library's bookkeeping of a memory's use, which changes neither its text nor its existence: no mem0 history row.
NOT_MEM0_EVENTS = frozenset({HistoryAction.HIT, HistoryAction.REACTIVATED})
ENTITY_HELP = "filters must contain at least one of: user_id, agent_id, run_id. Example: filters={'user_id': 'u1'}"


def entity_id(value: Any, name: str) -> str | None:
    """mem0's rule for an entity id: None stays None, a number becomes text, trimmed, never empty or with inner
    whitespace."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
    text = str(value).strip()
    if not text or any(c.isspace() for c in text):
        raise InvalidInput(f"{name} must be a non-empty identifier without whitespace, got {value!r}")
    return text


def owner_of(user_id: str | None, agent_id: str | None, run_id: str | None) -> str:
    """The native user a mem0 call addresses: its user_id, else the agent's or the run's own user."""
    if user_id:
        return user_id
    for name, value in (("agent_id", agent_id), ("run_id", run_id)):
        if value:
            return f"{name} {value}"
    raise InvalidInput(ENTITY_HELP)


def is_scope_user(user_id: str) -> bool:
    """Whether a native user is the stand-in of an agent or a run (`owner_of`), not a mem0 user."""
    return any(user_id.startswith(f"{k} ") for k in _SCOPE_KEYS)


def split_filters(filters: Any) -> tuple[str | None, dict[str, Any] | None]:
    """mem0's `filters` as (the native user, the native filter): a user_id at the top names whose memories; without
    one the call reads every user's memories (the owner is None), as mem0 does, narrowed by the filter, which keeps
    agent_id / run_id and translates every other key by `_tree`. Raises InvalidInput (a ValueError, as mem0's)
    naming the problem."""
    if not isinstance(filters, dict) or not any(k in filters for k in ENTITY_KEYS):
        raise InvalidInput(ENTITY_HELP)
    if isinstance(filters.get("user_id"), dict) or filters.get("user_id") == "*":
        raise InvalidInput("user_id in filters names one user (a string); a call reads one user's memories")
    user = entity_id(filters.get("user_id"), "user_id")
    scoped: dict[str, Any] = {}
    for key in _SCOPE_KEYS:
        if key in filters:
            value = filters[key]
            scoped[key] = ({"exists": True} if value == "*" else value) if isinstance(value, dict) or value == "*" \
                else entity_id(value, key)
    if user is None and not scoped:
        raise InvalidInput(ENTITY_HELP)
    rest = {k: v for k, v in filters.items() if k not in ENTITY_KEYS}
    native = {**scoped, **(_tree(rest) if rest else {})}
    return user, native or None


def _tree(node: Any) -> dict[str, Any]:
    """One mem0 filter object in the native syntax: combinators kept (NOT's list too), an agent_id / run_id kept,
    created_at / updated_at the library's dates, `metadata` a nested object of keys, and any other key (`categories`
    too) the caller's metadata key: mem0 keeps them all in the payload."""
    if not isinstance(node, dict) or not node:
        raise InvalidInput(f"a filter is a non-empty object, got {node!r}"[:120])
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("AND", "OR") or key == "NOT" and isinstance(value, list):
            out[key] = [_tree(v) for v in value] if isinstance(value, list) else value
        elif key == "NOT":
            out[key] = _tree(value)
        elif key == "user_id":
            raise InvalidInput("user_id goes at the top level of filters, not inside AND / OR / NOT")
        elif key in _SCOPE_KEYS:
            out[key] = {"exists": True} if value == "*" else value
        elif key in DATE_KEYS:
            out[f"metadata.{key}"] = value
        elif key == "metadata" and isinstance(value, dict):
            out.update({f"metadata.{k}": v for k, v in value.items()})
        elif not isinstance(key, str) or not key or "." in key:
            raise InvalidInput(f"unknown filter field {key!r}: a metadata key is a plain name")
        else:
            out[f"metadata.{key}"] = value
    return out


def turns(messages: Any) -> list[dict[str, str]]:
    """mem0's `messages` (a string, one message dict, or a list of them) as a list of {role, content}."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("messages must be a string, a message dict or a non-empty list of message dicts")
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise InvalidInput("each message is a dict with a string role and content")
    return messages


def expiration_date(value: Any) -> str | None:
    """mem0's rule for an expiration_date: None, a date, a datetime (its day) or a YYYY-MM-DD string, as the day
    "YYYY-MM-DD"; anything else (a number, "in 3 days", "2030/01/31") is refused with mem0's message, never read
    as something else (a number would be epoch seconds natively)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise InvalidInput("expiration_date must be a valid date in YYYY-MM-DD format.") from None
    raise InvalidInput("expiration_date must be a date string in YYYY-MM-DD format.")


def iso(epoch: int | None) -> str | None:
    """Epoch seconds as mem0's timestamps: ISO 8601 in UTC."""
    return None if epoch is None else datetime.fromtimestamp(int(epoch), timezone.utc).isoformat()


def memory_id(value: Any) -> int:
    """mem0 passes ids as strings: the native id they name."""
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text.isdigit() or int(text) <= 0:
        raise InvalidInput(f"memory_id must be a memory's id (a positive integer, as text or a number), got {value!r}")
    return int(text)


def item(record: MemoryRecord, score: float | None = None, with_score: bool = False) -> dict[str, Any]:
    """A memory as mem0's MemoryItem dict: id, memory, hash, metadata (the caller's own keys, or None), score
    (search and get), created_at, updated_at, then the ids and message fields mem0 promotes."""
    meta = {k: v for k, v in record.metadata.items() if k not in _NOT_CALLERS}
    out: dict[str, Any] = {"id": str(record.id), "memory": record.text, "hash": hashlib.md5(record.text.encode()).hexdigest(),
                           "metadata": meta or None}
    if with_score:
        out["score"] = score
    out.update(created_at=iso(record.created_at), updated_at=iso(record.updated_at))
    if not is_scope_user(record.user_id):
        out["user_id"] = record.user_id
    for key in ("agent_id", "run_id", "actor_id", "role"):
        if record.metadata.get(key) is not None:
            out[key] = record.metadata[key]
    until = record.metadata.get("expires_at")
    if until is not None and until != NEVER:
        out["expiration_date"] = iso(until)[:10]  # type: ignore[index]
    return out


def score_details(hit: SearchHit, score: float) -> dict[str, Any]:
    """explain=True's details under mem0's names: semantic_score (the cosine similarity, None where no dense search
    ran), bm25_score (BM25's normalised score, None where BM25 did not find it), final_score (the `score` shown and
    compared with `threshold`); the library's own ranking signals follow under `signals`."""
    return {"semantic_score": hit.similarity, "bm25_score": hit.signals.get("bm25_norm"), "final_score": round(float(score), 6),
            "signals": dict(hit.signals)}


def said_by(events: list[HistoryEvent], record: dict[str, Any] | None) -> dict[str, Any]:
    """The role and actor_id a memory was added with, which mem0 writes on each of its history rows: from the memory
    (a mem0 item), else, once deleted, from the row its deletion event keeps."""
    if record is not None:
        return {"actor_id": record.get("actor_id"), "role": record.get("role")}
    for event in reversed(events):
        meta = ((event.details or {}).get("row") or {}).get("metadata") or {}
        if meta:
            return {"actor_id": meta.get("actor_id"), "role": meta.get("role")}
    return {"actor_id": None, "role": None}


def history_item(event: HistoryEvent, said: dict[str, Any] | None = None) -> dict[str, Any]:
    """A history event as mem0's history row: ADD / UPDATE / DELETE (the library's other actions by name), with the
    role and actor_id the memory was added with (`said_by`)."""
    name = _EVENTS.get(event.action, event.action.value.upper())
    return {"id": str(event.event_id), "memory_id": str(event.memory_id), "old_memory": event.old_text,
            "new_memory": event.new_text, "event": name, "created_at": iso(event.at),
            "updated_at": iso(event.at), "is_deleted": name == "DELETE",  # mem0's ADD row too: its creation time
            "actor_id": (said or {}).get("actor_id"), "role": (said or {}).get("role")}
