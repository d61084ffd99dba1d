"""Checks on caller input, run before anything is written; each failure is an InvalidInput."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from datetime import datetime, timezone
from typing import Any

from .errors import InvalidInput
from .models import CARRIED, TEXT_MAX_BYTES, MemoryType, now_ts

ID_MAX_CHARS = 128  # the schema's VARCHAR(128); Milvus counts bytes, so we check bytes too
WHO_MAX = 128  # who defaults to user_id, so it holds any valid user_id
LIMIT_MAX = 1000
TS_MAX = 253_402_300_799  # 9999-12-31T23:59:59Z: the last second an ISO 8601 date (metadata.time) can say
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# User ids the framework adapters own (hippocampus/integrations/): their rows are an adapter's bookkeeping,
# not a person's memories, so a listing of the store's users leaves them out and names them for what they are.
RESERVED_USERS = {
    "oa-session:": "an OpenAI Agents SDK session's items (integrations/session_items.py)",
    "lg-store:": "a LangGraph store's registry of its users (integrations/langgraph.py)",
}


def reserved_user(user_id: str) -> str | None:
    """What a reserved (adapter-owned) user id holds, or None for a real user."""
    return next((what for prefix, what in RESERVED_USERS.items() if user_id.startswith(prefix)), None)


def check_id(name: str, value: Any, max_bytes: int = ID_MAX_CHARS) -> str:
    """user_id / chat_id / who: non-empty strings without control characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{name} must not be empty or whitespace")
    # Cc covers C0, DEL and the C1 range (U+0080..U+009F); Cs are lone surrogates (not UTF-8).
    if _CONTROL.search(value) or any(unicodedata.category(c) in ("Cc", "Cs") for c in value):
        raise InvalidInput(f"{name} must not contain control characters: {value!r}")
    if len(value.encode("utf-8")) > max_bytes:
        raise InvalidInput(f"{name} is longer than {max_bytes} UTF-8 bytes")
    return value


def check_memory_id(value: Any, name: str = "memory_id") -> int:
    """A store id (a memory's, or a history event's with `name`): an integer in 0 .. 2**63 - 1;
    digits in a string are accepted."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        else:
            raise InvalidInput(f"{name} must be an integer, got {value!r}")
    if not (0 <= value < 2**63):
        raise InvalidInput(f"{name} out of range: {value}")
    return int(value)


def check_text(value: Any, name: str = "text") -> str:
    """Memory text: non-empty, at most 65,535 UTF-8 bytes (the schema's limit); longer text is refused, not cut."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{name} must not be empty or whitespace")
    if any(unicodedata.category(c) == "Cs" for c in value):
        raise InvalidInput(f"{name} contains unpaired surrogates (not valid UTF-8)")
    size = len(value.encode("utf-8"))
    if size > TEXT_MAX_BYTES:
        advice = "Split it into several memories." if name == "text" else f"The {name} is too long: shorten it."
        raise InvalidInput(f"{name} is {size} UTF-8 bytes; the limit is {TEXT_MAX_BYTES}. {advice}")
    return value


def check_offset(value: Any) -> int:
    """A paging offset: a whole number from 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"offset must be a whole number >= 0, got {value!r}")
    return value


def check_limit(value: Any, name: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {value!r}")
    if not (0 <= value <= LIMIT_MAX):
        raise InvalidInput(f"{name} must be between 0 and {LIMIT_MAX}, got {value}")
    return value


def check_memory_type(value: Any) -> MemoryType | None:
    if value is None:
        return None
    try:
        return MemoryType(value)
    except ValueError:
        raise InvalidInput(f"unknown memory_type {value!r}; use 'episodic', 'semantic' or 'procedural'") from None


DEFAULT_SEARCH_KINDS = (MemoryType.EPISODIC, MemoryType.SEMANTIC)  # procedural memories come only when asked for


def check_memory_types(memory_type: Any, memory_types: Any) -> tuple[MemoryType, ...]:
    """The kinds a search covers: one (`memory_type`), several (`memory_types`), or episodic and semantic."""
    if memory_types is None:
        one = check_memory_type(memory_type)
        return (one,) if one is not None else DEFAULT_SEARCH_KINDS
    if memory_type is not None:
        raise InvalidInput("give memory_type or memory_types, not both")
    if isinstance(memory_types, (str, bytes)) or not isinstance(memory_types, (list, tuple)) or not memory_types:
        raise InvalidInput("memory_types must be a non-empty list such as ['episodic', 'procedural']")
    return tuple(dict.fromkeys(check_memory_type(t) for t in memory_types))  # type: ignore[misc]


# Metadata keys the library writes and reads back itself; a caller may not set them on add,
# add_many or update (they may still be used in search filters). Caller-visible keys that a caller
# may set stay open: the episodic fields (context, thing, time, chatid, who), the semantic ones
# (fact, source_chatid, first_seen), `updates`, and the ranking inputs `importance` / `last_used_at`.
OWNED_KEYS: dict[str, str] = {
    "created_at": "when the memory was written, in epoch seconds",
    "updated_at": "when the memory last changed, in epoch seconds",
    "pending_decision": "marks a turn kept raw until decide_pending or consolidation decides it",
    "turns": "the raw turns kept beside a pending decision",
    "source_text": "the raw turn text kept by the write decider",
    "merge_pending": "marks a merge that consolidation has not finished",
    "merged_from_ids": "the ids consolidation merged into this memory",
    "merge_key": "a hash of the merged ids: the same merge is never written twice (docs/scale.md)",
    "source_chat_ids": "the chats a merged memory came from, kept by consolidation",
    "separated_from": "the memories consolidation keeps apart from this one",
    "distilled": "marks an episode consolidation already distilled into facts",
    "semantic_ids": "the facts consolidation distilled from this episode",
    "source_memory_ids": "the episodes a distilled fact came from",
    "life": "importance, category, state and their times (lifecycle/policy.py)",
    "contradictions_checked": "marks a fact the contradiction judge has compared with the older ones",
    "compressed_from": "the facts a compression summarised into this one",
    "compressed_into": "the facts this one was compressed into (it is archived)",
    "compression": "facts or pattern: what a compression made this fact",
    "formed_at": "when a compressed fact's newest source formed, for its age",
    "compression_failed_at": "when compressing this fact last failed (it waits a week before the next try)",
    "source_hash": "the content hash an import found this memory under, so importing the file again adds nothing",
    "expires_at": "when the memory expires (epoch seconds), set by add / update's expires_at (lifecycle/expiry.py)",
    **CARRIED,  # agent_id, run_id: the request's fields a memory keeps in its metadata (models/record.py)
    "statements": "who the memory is about and which slots it fills (text/slots.py): corrections supersede by slot",
    "said_by": "'assistant' on the assistant's memory of a turn (memory/assistant_turns.py)",
    "assistant_kind": "what the assistant's memory of a turn keeps: a recommendation, a list, a plan or an answer",
}
_INT64 = (-(2**63), 2**63 - 1)


METADATA_MAX_BYTES = 65536  # serialised as JSON (UTF-8): Milvus' own limit for a JSON field
METADATA_MAX_DEPTH = 32  # levels of objects and lists, the metadata object itself being level 1
METADATA_MAX_KEY_BYTES = 256  # one key, in UTF-8 bytes
STORED_METADATA_MAX_BYTES = 2 * METADATA_MAX_BYTES  # a memory's whole metadata after an update: the caller's and the library's keys


def check_metadata(value: Any, name: str = "metadata", max_bytes: int = METADATA_MAX_BYTES) -> dict[str, Any]:
    """Metadata as JSON: a JSON object with string keys (at most 256 UTF-8 bytes each), finite
    numbers, integers that fit Milvus' int64, nested at most 32 levels and at most 64 KiB serialised.
    The limits keep every later read, search, export, merge and history event of the memory working.
    Used as is for search filters (and, with the stored limit, for a backup's whole metadata on
    import); writes go through `check_caller_metadata`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be a dict, got {type(value).__name__}")
    check_json_tree(value, name, METADATA_MAX_DEPTH)
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{name} contains text that is not valid UTF-8 (unpaired surrogates): {exc}") from exc
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{name} must be JSON-serialisable: {exc}") from exc
    if size > max_bytes:
        raise InvalidInput(f"{name} is larger than {max_bytes // 1024} KiB ({size} bytes serialised as JSON; the limit is {max_bytes})")
    return json.loads(encoded)


_SCALARS = (str, int, float, bool, type(None))


def _at(where: str) -> str:
    """A place in the metadata, short enough for a one-line error."""
    return where if len(where) <= 80 else f"{where[:50]}...{where[-25:]}"


def check_json_tree(value: Any, name: str, max_depth: int) -> None:
    """Walk a JSON value without recursion (so no depth can overflow the stack) and refuse, naming the
    place and the limit: nesting deeper than `max_depth`, non-string or over-long keys, NaN or
    infinite numbers, integers outside int64, and values that are not JSON (sets, bytes, objects)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, name)]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > max_depth:
                raise InvalidInput(f"{name} is nested more than {max_depth} levels deep (at {_at(where)}); "
                                   f"the limit is {max_depth} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise InvalidInput(f"{name} keys must be strings, got {type(key).__name__} {key!r} at {_at(where)}")
                    if len(key.encode("utf-8", "surrogatepass")) > METADATA_MAX_KEY_BYTES:
                        raise InvalidInput(f"{name} key {key[:20]!r}... at {_at(where)} is longer than {METADATA_MAX_KEY_BYTES} UTF-8 bytes")
                    stack.append((child, depth + 1, f"{where}[{key[:40]!r}]"))
            else:
                stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))
        elif not isinstance(item, _SCALARS):
            raise InvalidInput(f"{name} must be JSON: {type(item).__name__} at {_at(where)} is not a JSON value")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(f"{name} numbers must be finite, got {item} at {_at(where)}")
        elif isinstance(item, int) and not isinstance(item, bool) and not (_INT64[0] <= item <= _INT64[1]):
            raise InvalidInput(f"{name} integers must fit in 64 bits, got one of {item.bit_length()} bits at {_at(where)}")


def check_stored_metadata(value: dict[str, Any], name: str = "metadata after this update") -> None:
    """A memory's whole metadata (what an update merges into it) stays within 128 KiB serialised."""
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > STORED_METADATA_MAX_BYTES:
        raise InvalidInput(f"{name} would be {size} bytes serialised as JSON; the limit is {STORED_METADATA_MAX_BYTES} "
                           f"(128 KiB); put the rest in another memory")


def check_caller_metadata(value: Any) -> dict[str, Any]:
    """Metadata a caller stores with add / add_many / update: `check_metadata`, and none of the
    keys hippocampus owns (OWNED_KEYS), so a caller can never overwrite the library's bookkeeping."""
    decoded = check_metadata(value)
    owned = [key for key in decoded if key in OWNED_KEYS]
    if owned:
        key = owned[0]
        raise InvalidInput(f"metadata[{key!r}] is written by hippocampus itself ({OWNED_KEYS[key]}) and "
                           f"cannot be set by a caller; use another key name")
    return decoded


def check_ts(value: Any) -> int | None:
    """Event time: None (now), epoch seconds, or a datetime (naive means UTC)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = int(value.timestamp())  # then range-checked like epoch seconds (a date before 1970 is refused)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"ts must be epoch seconds or a datetime, got {type(value).__name__}")
    if not (0 <= value <= TS_MAX):
        raise InvalidInput(f"ts out of range: {value} (epoch seconds between 0 and {TS_MAX}, the end of year 9999)")
    return int(value)


def event_ts(value: Any, now: int | None = None) -> int:
    """The event time to store: `ts` checked, or now when it is None (0, the epoch, is a time too)."""
    checked = check_ts(value)
    if checked is not None:
        return checked
    return now if now is not None else now_ts()


def messages_to_text(messages: Any) -> tuple[str, list[dict[str, str]]]:
    """Accept a string, one {"role", "content"} dict (as mem0's add does) or OpenAI-style
    [{"role", "content"}]; return (text, turns)."""
    if isinstance(messages, str):
        check_text(messages)
        return messages, [{"role": "user", "content": messages}]
    if isinstance(messages, dict):  # one message: its role named, as mem0 reads it
        if not isinstance(messages.get("role"), str) or not isinstance(messages.get("content"), str):
            raise InvalidInput(f"one message must be a dict with string 'role' and 'content', got {messages!r}")
        messages = [messages]
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("messages must be a non-empty string, a {'role', 'content'} dict or a non-empty list of them")
    turns = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) or not isinstance(m.get("role", "user"), str):
            raise InvalidInput(f"each message must be a dict with string 'role' and 'content', got {m!r}")
        turns.append({"role": m.get("role", "user"), "content": m["content"]})
    if not any(t["content"].strip() for t in turns):
        raise InvalidInput("messages contain no text")
    if len(turns) == 1:
        text = turns[0]["content"]
    else:
        text = "\n".join(f"{t['role']}: {t['content']}" for t in turns if t["content"].strip())
    return check_text(text), turns


_ROLE_LINE = re.compile(r"^\s*(user|assistant|用户|助手)\s*[:：]\s?", re.IGNORECASE | re.MULTILINE)
_ROLES = {"user": "user", "assistant": "assistant", "用户": "user", "助手": "assistant"}


def exchange_turns(text: str) -> list[dict[str, str]]:
    """An exchange written as one string ("user: ...\\nassistant: ...") as turns; text without
    role prefixes is one user turn."""
    marks = list(_ROLE_LINE.finditer(text))
    if not marks or text[: marks[0].start()].strip():
        return [{"role": "user", "content": text}]
    turns = []
    for mark, nxt in zip(marks, marks[1:] + [None]):
        content = text[mark.end() : nxt.start() if nxt else len(text)].strip()
        if content:
            turns.append({"role": _ROLES[mark.group(1).lower()], "content": content})
    return turns or [{"role": "user", "content": text}]


def check_flag(name: str, value: Any) -> bool:
    """A true/false argument (include_expired, ...): a real bool, so "false" is not taken for true."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false, got {type(value).__name__}")
    return value
