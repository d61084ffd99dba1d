"""The one place where Milvus filter expressions are built.

milvus-lite rejects pymilvus `filter_params`, so values are rendered as literals
here and nowhere else: strings are escaped (backslash, quote, newline, tab; other control
characters are refused), integers must be real ints, field and JSON key names must be plain
identifiers. A value like `x" or user_id != "` stays one string literal.
"""

from __future__ import annotations

import json
import math
import re
from typing import Iterable

from ..errors import InvalidInput

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# Milvus string literals know \n \r \t but no \uXXXX escape: other control characters are refused.
_UNSAYABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_OPS = {"==", "!=", ">", ">=", "<", "<="}


def _field(name: str) -> str:
    if not isinstance(name, str) or not _FIELD.match(name):
        raise InvalidInput(f"not a valid field name: {name!r}")
    return name


def literal(value: object) -> str:
    """Render a Python value as a Milvus expression literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput("filter values must be finite numbers")
        return repr(value)
    if isinstance(value, str):
        bad = _UNSAYABLE.search(value)
        if bad:
            raise InvalidInput(
                f"filter value contains control character U+{ord(bad.group()):04X}, which Milvus cannot express"
            )
        # json.dumps escapes \\, ", and every control character; ensure_ascii=False keeps
        # Chinese and emoji readable while still escaping what could break the literal.
        return json.dumps(value, ensure_ascii=False)
    raise InvalidInput(f"unsupported filter value type: {type(value).__name__}")


def cmp(field: str, op: str, value: object) -> str:
    if op not in _OPS:
        raise InvalidInput(f"unsupported operator {op!r}")
    return f"{_field(field)} {op} {literal(value)}"


def eq(field: str, value: object) -> str:
    return cmp(field, "==", value)


def json_eq(field: str, key: str, value: object) -> str:
    """metadata["key"] == value, for metadata filters in search."""
    return f"{_field(field)}[{literal(_json_key(key))}] == {literal(value)}"


def json_missing(field: str, *keys: str) -> str:
    """not exists metadata["a"]["b"]: rows whose JSON lacks the nested key (Milvus 2.4 and later, milvus-lite)."""
    path = "".join(f"[{literal(_json_key(k))}]" for k in keys)
    return f"not exists {_field(field)}{path}"


def _json_key(key: str) -> str:
    if not isinstance(key, str) or not _FIELD.match(key):
        raise InvalidInput(f"metadata filter keys must be identifiers, got {key!r}")
    return key


def in_(field: str, values: Iterable[object]) -> str:
    items = [literal(v) for v in values]
    if not items:
        return "false"
    return f"{_field(field)} in [{', '.join(items)}]"


def contains_any(field: str, values: Iterable[int]) -> str:
    """An ARRAY field holding any of `values` (integers)."""
    items = [literal(v) for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if not items:
        return "false"
    return f"array_contains_any({_field(field)}, [{', '.join(items)}])"


def and_(*parts: str | None) -> str:
    """Conjunction of already-built expressions; empty when none is given."""
    return _join("and", parts)


def or_(*parts: str | None) -> str:
    """Disjunction of already-built expressions; empty when none is given."""
    return _join("or", parts)


def _join(op: str, parts: tuple[str | None, ...]) -> str:
    kept = [p for p in parts if p]
    if len(kept) <= 1:
        return kept[0] if kept else ""
    return f" {op} ".join(f"({p})" for p in kept)
