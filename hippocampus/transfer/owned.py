"""The library's own metadata keys in an imported line (issue 42, item 1): a backup may carry them
(that is what makes it a backup), so an import cannot refuse them as `add` refuses a caller's; it
checks that each holds what the library itself writes there instead. A line whose `updated_at` is
"soon", whose `created_at` is 2**62 or whose `agent_id` is an object would otherwise be stored and
break every later read, edit and store-wide job of its user. Pure: raises InvalidInput naming the key."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timezone
from typing import Any

from pydantic import ValidationError

from .. import validation as V
from ..errors import InvalidInput
from ..models import LIFE_KEY, Lifecycle

_TIMES = ("created_at", "updated_at", "expires_at", "formed_at", "compression_failed_at")
_FLAGS = ("pending_decision", "merge_pending", "distilled", "contradictions_checked")
_ID_LISTS = ("merged_from_ids", "separated_from", "semantic_ids", "source_memory_ids", "compressed_from", "compressed_into")
_STRINGS = ("source_text", "merge_key", "source_hash", "said_by", "assistant_kind")
_NAMES = ("agent_id", "run_id")  # as add's agent_id / run_id: an id string
_LIFE_TIMES = ("last_activated", "valid_to", "expires_at", "reviewed_at")
_COMPRESSION = ("facts", "pattern")
_UTC_DAY_MAX = V.TS_MAX // 86400


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _time(key: str, value: Any) -> None:
    """Epoch seconds, 0 .. the end of year 9999 (what every clock of the library can turn into a date)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"metadata[{key!r}] must be epoch seconds (an integer), got {_kind(value)} {str(value)[:40]!r}")
    if not 0 <= value <= V.TS_MAX:
        raise InvalidInput(f"metadata[{key!r}] out of range: {value} (epoch seconds between 0 and {V.TS_MAX})")


def _flag(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidInput(f"metadata[{key!r}] must be true or false, got {_kind(value)}")


def _ids(key: str, value: Any) -> None:
    if not isinstance(value, list):
        raise InvalidInput(f"metadata[{key!r}] must be a list of memory ids, got {_kind(value)}")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < 2**63:
            raise InvalidInput(f"metadata[{key!r}] must hold memory ids (integers from 0), got {str(item)[:40]!r}")


def _string(key: str, value: Any) -> None:
    if not isinstance(value, str):
        raise InvalidInput(f"metadata[{key!r}] must be a string, got {_kind(value)}")


def _name(key: str, value: Any) -> None:
    V.check_id(f"metadata[{key!r}]", value)


def _chats(key: str, value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise InvalidInput(f"metadata[{key!r}] must be a list of chat ids (strings)")


def _turns(key: str, value: Any) -> None:
    if not isinstance(value, list) or not all(
            isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("content"), str) for t in value):
        raise InvalidInput(f"metadata[{key!r}] must be a list of turns, each {{'role': str, 'content': str}}")


def _compression(key: str, value: Any) -> None:
    if value not in _COMPRESSION:
        raise InvalidInput(f"metadata[{key!r}] must be one of {', '.join(_COMPRESSION)}, got {str(value)[:40]!r}")


def _life(key: str, value: Any) -> None:
    """A lifecycle as Lifecycle reads it, its times in range (a damaged one would silently reset on read)."""
    if not isinstance(value, dict):
        raise InvalidInput(f"metadata[{key!r}] must be an object of lifecycle fields, got {_kind(value)}")
    try:
        Lifecycle.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InvalidInput(f"metadata[{key!r}]: {problems}") from None
    for field in _LIFE_TIMES:
        if value.get(field) is not None:
            _time(f"{key}.{field}", value[field])
    day = value.get("uses_day")
    if day is not None and (isinstance(day, bool) or not isinstance(day, int) or not 0 <= day <= _UTC_DAY_MAX):
        raise InvalidInput(f"metadata['{key}.uses_day'] must be a day number between 0 and {_UTC_DAY_MAX}")
    sup = value.get("superseded_by")
    if sup is not None and (isinstance(sup, bool) or not isinstance(sup, int) or not 0 <= sup < 2**63):
        raise InvalidInput(f"metadata['{key}.superseded_by'] must be a memory id")


def _said_at(key: str, value: Any) -> None:
    """An ISO 8601 moment within 1970 .. 9999, as writes stamp it (store/writes.py)."""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00")) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise InvalidInput(f"metadata[{key!r}] must be an ISO 8601 date and time, got {str(value)[:40]!r}")
    try:
        stamp = (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()
    except (OverflowError, OSError, ValueError):
        stamp = -1
    if not 0 <= stamp <= V.TS_MAX:
        raise InvalidInput(f"metadata[{key!r}] must be between 1970 and the end of 9999, got {value[:40]!r}")


def _named_date(key: str, value: Any) -> None:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        date.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"metadata[{key!r}] must be an ISO date (YYYY-MM-DD), got {str(value)[:40]!r}") from None


def _statements(key: str, value: Any) -> None:
    """A list of statements as the slot reader writes them (text/slots.Statement), each of a known attribute."""
    from ..text.slot_tables import ATTRIBUTES
    from ..text.slots import Statement

    try:
        if not isinstance(value, list) or len(value) > 64:
            raise ValueError(value)
        statements = [Statement.model_validate(s) for s in value]
    except (ValueError, ValidationError):
        raise InvalidInput(f"metadata[{key!r}] must be a list of statements (subject, attribute, value, old), "
                           f"got {str(value)[:40]!r}") from None
    unknown = [s.attribute for s in statements if s.attribute not in ATTRIBUTES]
    if unknown:
        raise InvalidInput(f"metadata[{key!r}] names an unknown attribute {unknown[0][:40]!r}")


CHECKS: dict[str, Callable[[str, Any], None]] = {
    **dict.fromkeys(_TIMES, _time), **dict.fromkeys(_FLAGS, _flag), **dict.fromkeys(_ID_LISTS, _ids),
    **dict.fromkeys(_STRINGS, _string), **dict.fromkeys(_NAMES, _name),
    "source_chat_ids": _chats, "turns": _turns, "compression": _compression, LIFE_KEY: _life,
    "said_at": _said_at, "named_date": _named_date,  # not owned, but written and read back by the library
    "statements": _statements,
}


def check_owned(metadata: dict[str, Any]) -> None:
    """Every library-owned key of an imported memory's metadata holds what the library writes there.
    `expires_at` may be null (no expiry). InvalidInput names the first key that does not."""
    for key, check in CHECKS.items():
        if key not in metadata or (key == "expires_at" and metadata[key] is None):
            continue
        check(key, metadata[key])


def without_damaged(metadata: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`metadata` less the library-owned keys that do not hold what the library writes there, and
    their names. An export writes a row an older import let in this way: as reads take it (without
    the damaged stamp), so that the backup imports back instead of being refused at that line."""
    damaged = []
    for key, check in CHECKS.items():
        if key in metadata and not (key == "expires_at" and metadata[key] is None):
            try:
                check(key, metadata[key])
            except InvalidInput:
                damaged.append(key)
    return {k: v for k, v in metadata.items() if k not in damaged}, damaged
