"""The request each verb of `Client` and `AsyncClient` sends (client.py sends them): one `Call` per
verb, written once in `_Requests` with Memory's signatures. Arguments go to the service as given (made
JSON-ready by `_plain`), except ids, which travel in the URL and are checked here with the facade's
own checks, so a bad one is the same InvalidInput as in-process."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Generic, TypeVar, cast

from pydantic import TypeAdapter

from .. import validation as V
from ..contract.replies import BatchDeleteResult, BatchUpdateResult, GraphStats, GraphView, ImportReport
from ..contract.wire import IdsResult
from ..errors import InvalidInput
from ..models import (
    AddResult,
    ConsolidationStats,
    DecayStats,
    HistoryEvent,
    MemoryPage,
    MemoryRecord,
    MemoryType,
    ObserveResult,
    SearchResult,
    UndoResult,
)

R = TypeVar("R")


@dataclass
class Call(Generic[R]):
    """One request and how to read its answer."""

    method: str
    path: str
    reply: Any  # a pydantic model class, a TypeAdapter, or None (raw JSON)
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    timeout: Any = "default"  # "default", "long" (the Client's two settings) or seconds; never unbounded

    def read(self, payload: Any) -> R:
        if self.reply is None:
            return cast(R, payload)
        if isinstance(self.reply, TypeAdapter):
            return cast(R, self.reply.validate_python(payload))
        return cast(R, self.reply.model_validate(payload))


def _when(value: Any) -> Any:
    """An `expires_at` for the wire: a datetime as ISO 8601 (a naive one stays naive: the service reads it
    in the user's zone, as Memory does); anything else as given, for the service to judge."""
    return value.isoformat() if isinstance(value, datetime) else value


def _filters_param(filters: Any) -> str | None:
    """`filters` as the JSON text of GET /v1/memories' query parameter (None: no filter)."""
    if filters is None:
        return None
    if not isinstance(filters, dict):
        raise InvalidInput(f"filters must be a dict, got {type(filters).__name__}")
    return json.dumps(_plain(filters), ensure_ascii=False, allow_nan=False)


def _plain(value: Any) -> Any:
    """JSON-ready without judging the value: enums by value, datetimes as the epoch seconds Memory would
    make of them (naive means UTC); the service decides what is valid."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.timestamp() if value.tzinfo else value.replace(tzinfo=timezone.utc).timestamp()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _json(body: Any) -> bytes:
    try:
        return json.dumps(_plain(body), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"not JSON-serialisable: {exc}") from None


def _id(memory_id: Any) -> int:
    """Ids go into the URL path and user ids into the query string, where every value becomes text:
    they are checked here, with the facade's own checks, so a bad one is the same InvalidInput."""
    return V.check_memory_id(memory_id)


def _uid(user_id: Any) -> str:
    return V.check_id("user_id", user_id)


def _event_id(event_id: Any) -> int:
    return V.check_memory_id(event_id, "event_id")


_HISTORY = TypeAdapter(list[HistoryEvent])
_RECORDS = TypeAdapter(list[MemoryRecord])


class _Requests:
    """The request of each verb; the signatures and errors are Memory's. Every verb of a Client also
    raises ServiceUnavailable when the service cannot be reached and AuthError when it refuses the
    API key; the service's own failures come back as the same errors Memory raises."""

    def add(self, messages: Any, user_id: str, **fields: Any) -> Call[AddResult]:
        """Remember a turn (see Memory.add). Raises InvalidInput for a bad argument or a library-owned
        metadata key (created_at, updated_at, pending_decision, ...)."""
        body = {"messages": messages, "user_id": user_id, **fields}  # AddRequest's fields, whatever they are
        body["expires_at"] = _when(body.get("expires_at"))
        return Call("POST", "/memories", AddResult, body=body, timeout="long" if fields.get("infer") else "default")

    def add_many(self, items: Sequence[dict[str, Any]], batch_size: int = 256) -> Call[list[int]]:
        """Store many turns as-is (see Memory.add_many); the ids in input order. Raises InvalidInput,
        before anything is written, for any bad item."""
        call: Call[Any] = Call("POST", "/memories/batch", IdsResult, body={"items": list(items), "batch_size": batch_size},
                               timeout="long")  # up to wire.MAX_ADD_MANY texts embedded
        call.read = lambda payload: IdsResult.model_validate(payload).ids  # type: ignore[method-assign]
        return call

    def search(self, query: str, user_id: str, **fields: Any) -> Call[SearchResult]:
        """Recall memories for a query (see Memory.search). Raises InvalidInput for a bad argument."""
        body = {"query": query, "user_id": user_id, **fields}  # SearchRequest's fields, whatever they are
        if body.get("memory_types") is not None:
            body["memory_types"] = list(body["memory_types"])
        body["as_of"] = _when(body.get("as_of"))
        return Call("POST", "/search", SearchResult, body=body)

    def get(self, memory_id: int, user_id: str) -> Call[MemoryRecord]:
        """One memory. Raises InvalidInput for a bad id; NotFound when it is missing or another user's."""
        return Call("GET", f"/memories/{_id(memory_id)}", MemoryRecord, params={"user_id": _uid(user_id)})

    def page(self, user_id: str, memory_type: MemoryType | str | None = None, **fields: Any) -> Call[MemoryPage]:
        """A page of the user's memories matching `filters`, oldest event first. Raises InvalidInput for a bad argument."""
        fields.setdefault("offset", 0)
        fields.setdefault("limit", 100)
        fields["offset"], fields["limit"] = V.check_offset(fields["offset"]), V.check_limit(fields["limit"])
        fields["filters"] = _filters_param(fields.get("filters"))  # JSON text in the query string
        if fields.get("include_expired") is not None:
            fields["include_expired"] = "true" if V.check_flag("include_expired", fields["include_expired"]) else None
        scope = _agent_params(fields.pop("agent_id", None), fields.pop("agent_scope", "both"), fields.pop("run_id", None))
        params = {"user_id": _uid(user_id), "memory_type": _plain(memory_type), **fields, **scope}  # PageRequest's fields
        return Call("GET", "/memories", MemoryPage, params={k: v for k, v in params.items() if v is not None})

    def update(self, memory_id: int, text: str, **fields: Any) -> Call[MemoryRecord]:
        """Replace a memory's text; the id stays, the old text goes to history. Raises InvalidInput for
        a bad argument or a library-owned metadata key; NotFound when it is missing or another user's."""
        body = {"text": text, **fields}  # UpdateRequest's fields but the id (in the path), whatever they are
        body["expires_at"] = _when(body.get("expires_at"))
        return Call("PATCH", f"/memories/{_id(memory_id)}", MemoryRecord, body=body)

    def delete(self, memory_id: int, user_id: str) -> Call[None]:
        """Delete one memory (its history stays). Raises InvalidInput for a bad id; NotFound when it
        is missing or another user's."""
        call: Call[Any] = Call("DELETE", f"/memories/{_id(memory_id)}", None, params={"user_id": _uid(user_id)})
        call.read = lambda payload: None  # type: ignore[method-assign]
        return call

    def update_many(self, items: Sequence[dict[str, Any]], user_id: str) -> Call[BatchUpdateResult]:
        """Update up to 1,000 memories, a result per item (see Memory.update_many). Raises InvalidInput,
        before anything changes, for more than 1,000 or any malformed item."""
        if isinstance(items, (str, bytes, dict)):
            raise InvalidInput(f"items must be a list, got {type(items).__name__}")
        return Call("POST", "/memories/batch/update", BatchUpdateResult, body={"user_id": user_id, "items": list(items)})

    def delete_many(self, memory_ids: Sequence[Any], user_id: str) -> Call[BatchDeleteResult]:
        """Delete up to 1,000 memories, a result per id (see Memory.delete_many); a str is ids separated by
        commas or spaces. Raises InvalidInput, before anything is deleted, for a bad id or more than 1,000."""
        if isinstance(memory_ids, str):
            memory_ids = [p for p in re.split(r"[\s,;，；]+", memory_ids) if p]
        ids = [_id(i) for i in memory_ids]  # duplicates and the cap: the service's Memory decides, as in-process
        return Call("POST", "/memories/batch/delete", BatchDeleteResult, body={"user_id": user_id, "memory_ids": ids})

    def reset(self, user_id: str) -> Call[int]:
        """Erase every memory of this user and its history; how many memories went. Raises InvalidInput
        for a bad user_id."""
        call: Call[Any] = Call("DELETE", "/memories", None, params={"user_id": _uid(user_id)})
        call.read = lambda payload: int(payload["deleted"])  # type: ignore[method-assign]
        return call

    def history(self, memory_id: int, user_id: str) -> Call[list[HistoryEvent]]:
        """Every change to this memory, oldest first. Raises InvalidInput for a bad id; NotFound when
        there is no history for this user."""
        return Call("GET", f"/memories/{_id(memory_id)}/history", _HISTORY, params={"user_id": _uid(user_id)})

    def mark_used(self, memory_ids: int | Sequence[int], user_id: str, context: str | None = None) -> Call[list[MemoryRecord]]:
        """Report which recalled memories the answer used (see Memory.mark_used). Raises InvalidInput
        for a bad argument; NotFound, before anything changes, for an unknown or another user's id."""
        ids = [memory_ids] if isinstance(memory_ids, (int, str)) else list(memory_ids)
        return Call("POST", "/memories/used", _RECORDS, body={"user_id": user_id, "memory_ids": ids, "context": context})

    def observe(self, messages: Any, user_id: str, **fields: Any) -> Call[ObserveResult]:
        """After a turn, one KnowledgeMonitor call (see Memory.observe); `shown` takes ids or search
        hits. Raises InvalidInput for a bad argument."""
        shown = fields.get("shown", ())
        if isinstance(shown, (str, bytes)):
            raise InvalidInput("shown must be a list of memory ids or search hits")
        body = {"messages": messages, "user_id": user_id, **fields, "shown": [getattr(s, "id", s) for s in shown]}
        return Call("POST", "/observe", ObserveResult, body=body, timeout="long")

    def consolidate(self, user_id: str | None = None, progress: Any = None) -> Call[ConsolidationStats]:
        """Run consolidation in the service (after any run in progress); `progress` is not streamed.
        Raises InvalidInput for a bad user_id."""
        return Call("POST", "/consolidate", ConsolidationStats, body={"user_id": user_id}, timeout="long")

    def decay(self, user_id: str | None = None, now: Any = None, progress: Any = None) -> Call[DecayStats]:
        """Archive and forget what has decayed (see Memory.decay), for one user or every user the key
        may touch. Raises InvalidInput for a bad user_id or now."""
        return Call("POST", "/decay", DecayStats, body={"user_id": user_id, "now": now}, timeout="long")

    def graph(self, user_id: str, limit: int | None = None) -> Call[GraphView]:
        """The user's entities and triples (see Memory.graph). Raises InvalidInput for a bad argument."""
        params = {"user_id": _uid(user_id), **({"limit": V.check_limit(limit)} if limit is not None else {})}
        return Call("GET", "/graph", GraphView, params=params)

    def context(self, user_id: str, query: str | None = None, **fields: Any) -> Call[str]:
        """The prompt block (see Memory.context); `now` is for in-process simulations and is refused here.
        Raises InvalidInput for a bad argument."""
        if fields.pop("now", None) is not None:
            raise InvalidInput("context(now=...) is for in-process simulations; a service uses its own clock")
        if "max_items" in fields:
            fields["max_items"] = V.check_limit(fields["max_items"], "max_items")
        if "dates" in fields:
            fields["dates"] = bool(fields["dates"])
        scope = _agent_params(fields.pop("agent_id", None), fields.pop("agent_scope", "both"), fields.pop("run_id", None))
        params = {"user_id": _uid(user_id), "query": query, **fields, **scope}  # ContextRequest's fields, whatever they are
        call: Call[Any] = Call("GET", "/context", None, params={k: v for k, v in params.items() if v is not None})
        call.read = lambda payload: str(payload["context"])  # type: ignore[method-assign]
        return call

    def curate(self, memory_id: int, user_id: str, **fields: Any) -> Call[MemoryRecord]:
        """Set a memory's category and/or importance (see Memory.curate). Raises InvalidInput for a bad
        value or neither; NotFound when it is missing or another user's."""
        body = {"user_id": user_id, **{k: _plain(v) for k, v in fields.items()}}  # CurateRequest's fields but the id
        return Call("POST", f"/memories/{_id(memory_id)}/curate", MemoryRecord, body=body)

    def restore(self, memory_id: int, user_id: str) -> Call[MemoryRecord]:
        """Bring back a memory that decay forgot (see Memory.restore). Raises InvalidInput when it was
        not forgotten or was restored already; NotFound when there is no history for this user."""
        return Call("POST", f"/memories/{_id(memory_id)}/restore", MemoryRecord, params={"user_id": _uid(user_id)})

    def undo(self, event_id: int, user_id: str) -> Call[UndoResult]:
        """Put back the state from before one history event (see Memory.undo). Raises InvalidInput for
        a bad id or an event that cannot be undone (or was undone already, or whose memory changed
        after it); NotFound when the event is unknown or another user's."""
        return Call("POST", f"/history/{_event_id(event_id)}/undo", UndoResult, params={"user_id": _uid(user_id)})

    def stats(self, user_id: str | None = None) -> Call[dict[str, Any]]:
        """Memories by kind; with an operator key also the service's latency per endpoint and runs.
        Raises InvalidInput for a bad user_id."""
        return Call("GET", "/stats", None, params={"user_id": _uid(user_id)} if user_id is not None else {})

    # ------------------------------------------------------------------ export, import, graph build
    # Files stay on the caller's machine: an export comes back as text and is written here, an
    # import's file is read here and its text sent (server/transfer_routes.py).
    def export_md(self, user_id: str, path: Any = None, now: Any = None) -> Call[str]:
        """This user's memories as a MEMORY.md (see Memory.export_md); with `path` the file is written
        here (the old one kept as .bak). Raises InvalidInput for a bad user_id or now; OSError."""
        from ..transfer import files

        params = {"user_id": _uid(user_id), **({"now": now} if now is not None else {})}
        call: Call[Any] = Call("GET", "/export/md", None, params=params)

        def read(payload: Any) -> str:
            text = str(payload["text"])
            if path is not None:
                files.save(path, text)
            return text

        call.read = read  # type: ignore[method-assign]
        return call

    def export_jsonl(self, user_id: str, path: Any) -> Call[int]:
        """Back up this user's memories and history as JSONL into `path`, written here (see
        Memory.export_jsonl); how many memories. Raises InvalidInput for a bad user_id; OSError."""
        from ..transfer import files

        call: Call[Any] = Call("GET", "/export/jsonl", None, params={"user_id": _uid(user_id)})

        def read(payload: Any) -> int:
            files.write_atomically(path, [str(payload["text"])])
            return int(payload["count"])

        call.read = read  # type: ignore[method-assign]
        return call

    def import_md(self, user_id: str, text_or_path: Any) -> Call[ImportReport]:
        """Bring an edited MEMORY.md back (see Memory.import_md): text, or a path read here. Raises
        InvalidInput for a bad user_id or an unreadable file."""
        text, missing = _local_text(text_or_path, "import_md", lines=True)
        call: Call[Any] = Call("POST", "/import/md", ImportReport, body={"user_id": user_id, "text": text}, timeout="long")
        if missing:
            call.read = lambda payload: ImportReport.model_validate(  # type: ignore[method-assign]
                {**payload, "warnings": [missing, *payload.get("warnings", [])]})
        return call

    def import_jsonl(self, user_id: str, path: Any) -> Call[ImportReport]:
        """Restore a JSONL backup, read here, as this user's memories (see Memory.import_jsonl).
        Raises InvalidInput naming a bad line (nothing changes) or for an unreadable file."""
        text, missing = _local_text(path, "import_jsonl", lines=False)
        if missing:
            raise InvalidInput(f"cannot read {str(path)!r}: no such file")
        return Call("POST", "/import/jsonl", ImportReport, body={"user_id": user_id, "text": text}, timeout="long")

    def build_graph(self, user_id: str | None = None, progress: Any = None) -> Call[GraphStats]:
        """Read new memories into the graph now (see Memory.build_graph); `progress` is not streamed.
        Raises InvalidInput for a bad user_id."""
        return Call("POST", "/graph/build", GraphStats, body={"user_id": user_id}, timeout="long")


def _local_text(source: Any, verb: str, lines: bool) -> tuple[str, str]:
    """A file's text read on this machine (and a warning when it is missing), or, with `lines`, a
    text with a newline taken as the text itself (as Memory.import_md does)."""
    import os
    from pathlib import Path

    if lines and isinstance(source, str) and "\n" in source:
        return source, ""
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidInput(f"{verb} takes {'MEMORY.md text or ' if lines else ''}a path, got {type(source).__name__}")
    try:
        return Path(source).read_text(encoding="utf-8"), ""
    except FileNotFoundError:
        return "", f"{source} does not exist; nothing imported"
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {str(source)!r}: {exc}") from None


def _agent_params(agent_id: str | None, agent_scope: str, run_id: str | None) -> dict[str, Any]:
    """The agent scope as query parameters (store/agents.py); the defaults are left out."""
    out: dict[str, Any] = {"agent_id": agent_id, "run_id": run_id}
    if agent_scope != "both":
        out["agent_scope"] = agent_scope
    return {k: v for k, v in out.items() if v is not None}


REQUESTS = _Requests()  # the request builders, called by Client, AsyncClient and remote/transport.py
