"""The service's request and reply bodies: one contract shared by `server/` and `client.py`.

Replies are the library's own models (MemoryRecord, SearchResult, ...); this module adds only the
request bodies and the error envelope. Field types are deliberately as loose as `Memory` accepts,
so that the facade's validation, not a second copy of it here, decides what is InvalidInput.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from . import requests
from .requests import (
    MAX_IDS,
    MAX_TURNS,
    AddRequest,
    Expiry,
    Message,
    NotAFlag,
    ObserveRequest,
    SearchRequest,
    Timestamp,
    Turns,
    not_a_flag,
    without,
)

__all__ = ["MAX_IDS", "MAX_TURNS", "AddRequest", "Expiry", "Message", "NotAFlag", "ObserveRequest", "SearchRequest",  # defined
           "Timestamp", "Turns", "not_a_flag"]  # once: contract/requests.py
API_PREFIX = "/v1"
KEY_HEADER = "Authorization"  # "Bearer <key>"; X-API-Key is accepted too
ALT_KEY_HEADER = "X-API-Key"

# The texts one add_many request may embed (issue 41): tens of seconds of the embedders on few cores, which other
# tenants share (they take turns per chunk of 8 texts: embeddings/turns.py FairLock). The service refuses
# more with InvalidInput 422 (server/rest.py); the Client sends a larger batch as several requests.
MAX_ADD_MANY = 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AddManyRequest(_Body):
    items: list[dict[str, Any]] = Field(description=f"each as for add: messages (or text), user_id, chat_id, ...; at most "
                                                    f"{MAX_ADD_MANY} (InvalidInput 422 above: send several requests)")
    batch_size: int = Field(default=256, ge=1, le=4096)


class IdsResult(BaseModel):
    ids: list[int] = Field(default_factory=list)


# PATCH /v1/memories/{memory_id}'s body: UpdateRequest's fields but the id, which is in the path (a field added to
# the model is a field of the body with no line here)
UpdateRequest: type[requests.Request] = without(requests.UpdateRequest, "memory_id")


class UpdateManyRequest(_Body):
    user_id: str
    items: list[Any] = Field(description="up to 1,000 of {memory_id, text, metadata?, expires_at?}; one malformed item refuses the call",
                             max_length=MAX_IDS)


class DeleteManyRequest(_Body):
    user_id: str
    memory_ids: list[int] = Field(description="up to 1,000 memory ids; core memories are skipped, never deleted", max_length=MAX_IDS)


class MarkUsedRequest(_Body):
    user_id: str
    memory_ids: list[int] = Field(max_length=MAX_IDS)
    context: str | None = None


class ConsolidateRequest(_Body):
    user_id: str | None = Field(default=None, description="one user; default: every user the key may touch")


class DecayRequest(_Body):
    user_id: str | None = Field(default=None, description="one user; default: every user the key may touch")
    now: Timestamp = Field(default=None, description="the clock to decay to (simulations); default: now")


CurateRequest: type[requests.Request] = without(requests.CurateRequest, "memory_id")  # POST .../{memory_id}/curate's body


class ContextReply(BaseModel):
    context: str = Field(description="the prompt block; empty when nothing qualifies")


class Deleted(BaseModel):
    deleted: int


class ResetResult(BaseModel):
    user_id: str
    deleted: int


class ExportReply(BaseModel):
    """An export's text (MEMORY.md or JSONL) and how many memories it holds; the Client writes the file."""

    user_id: str
    count: int
    text: str


class ImportRequest(_Body):
    user_id: str
    text: str = Field(description="the MEMORY.md or JSONL text itself (the Client reads the file on the caller's machine)")


class BuildGraphRequest(_Body):
    user_id: str | None = Field(default=None, description="one user; default: every user the key may touch")


class ErrorDetail(BaseModel):
    type: str = Field(description="the library's exception class, e.g. NotFound, InvalidInput, StoreError")
    message: str


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer of the service has this shape."""

    error: ErrorDetail


def error_body(kind: str, message: str) -> dict[str, Any]:
    return ErrorBody(error=ErrorDetail(type=kind, message=message)).model_dump()


def json_filters(raw: str | None) -> dict[str, Any] | None:
    """A `filters` query parameter (GET /v1/memories): search's filters as one JSON object, parsed here so
    that a malformed one is a 422 with one line, as every bad filter is."""
    import json

    from ..errors import InvalidInput

    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"filters must be a JSON object: {exc.msg} at character {exc.pos}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"filters must be a JSON object, got {type(value).__name__}")
    return value
