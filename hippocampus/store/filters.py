"""The one place where Milvus filter expressions are built.

milvus-lite rejects pymilvus `filter_params`, so values are rendered as literals
here and nowhere else: strings are escaped (backslash, quote, newline, tab; other control
characters are refused), integers must be real ints, field and JSON key names must be plain
identifiers. A value like `x" or user_id != "` stays one string literal. This module reads no store:
checking a caller's filter against the user's rows is filter_check.py's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

from ..errors import InvalidInput
from ..models import Category
from ..validation import OWNED_KEYS
from . import filter_ops
from .filter_ops import FILTER_STATES, project_category

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


# ---------------------------------------------------------------------- the caller's filters
# What `search(filters=...)` (and every face that passes them on: Client, REST, MCP, CLI `-f`) accepts.
# A documented field is matched where its value really lives: `chat_id`, `who` and `memory_type` are
# columns (episodic metadata keeps a copy named `chatid`, an alias of the column here); `category`
# and `state` are the lifecycle's (metadata["life"], with the defaults of a memory written before
# it). `metadata.<key>` (or `metadata.<a>.<b>`) is the caller's own metadata, always. A bare other
# key is the metadata key of older callers, accepted only when some memory of the user has it:
# otherwise InvalidInput naming the fields, never a silent empty answer.
FILTER_COLUMNS: tuple[str, ...] = ("chat_id", "who", "memory_type")
FILTER_ALIASES: dict[str, str] = {"chatid": "chat_id"}
METADATA_PREFIX = "metadata."
# `category` and `state` name the lifecycle's; for a user whose own metadata has a key of that name a bare one is
# ambiguous and refused (filter_check.py `checked_filter`): `lifecycle.category` / `metadata.category` say which.
LIFECYCLE_FIELDS: tuple[str, ...] = ("category", "state")
LIFECYCLE_PREFIX = "lifecycle."
# Metadata keys the library writes (docs/limits.md; validation.OWNED_KEYS): known by name, taken bare without a look.
LIBRARY_KEYS: frozenset[str] = frozenset({*OWNED_KEYS, "context", "thing", "time", "fact", "source_chatid",
                                          "first_seen", "updates", "importance", "last_used_at"})
FILTER_FIELDS_HELP = ("chat_id, who, memory_type, category, state (lifecycle.category, lifecycle.state), agent_id, run_id, "
                      "created_at, updated_at, or metadata.<key> for a key of the memory's own metadata")


NEVER = "id < 0"  # false on every engine (Milvus 2.3 refuses a bare `false` beside `and`); ids are positive


class CallerFilter:
    """The caller's filters compiled: `expr` for the store, the bare keys still to be proven to be
    metadata keys of this user (`bare`), whether superseded memories were asked for, and the part
    Milvus cannot evaluate exactly (`residual`, filter_ops.py), which filter_check.py `checked_filter` turns into ids."""

    def __init__(self, expr: str, bare: list[str], wants_superseded: bool, residual: filter_ops.Tree | None = None,
                 named_life: list[str] | None = None):
        self.expr, self.bare, self.wants_superseded, self.residual = expr, bare, wants_superseded, residual
        self.named_life = named_life or []  # `category` / `state` written bare: checked for ambiguity with metadata


def _lifecycle_name(key: object, named_life: list[str]) -> object:
    """`lifecycle.category` -> "category" (explicit); a bare `category` is noted in `named_life` for the check."""
    if isinstance(key, str) and key.startswith(LIFECYCLE_PREFIX):
        name = key[len(LIFECYCLE_PREFIX):]
        if name not in LIFECYCLE_FIELDS:
            raise InvalidInput(f"unknown filter field {key!r}; the lifecycle's fields are lifecycle.category and lifecycle.state")
        return name
    if key in LIFECYCLE_FIELDS and key not in named_life:
        named_life.append(key)  # type: ignore[arg-type]
    return key


def caller_filter(filters: dict[str, object] | None, json_exists: bool = True) -> CallerFilter:
    """Compile a `filters` dict into one escaped expression, ANDed: field -> exact value, or mem0's
    operators and AND/OR/NOT (filter_ops.py). Raises InvalidInput for a bad value, operator or a key
    that cannot be a field (see the rule above)."""
    if filter_ops.uses_operators(filters):  # type: ignore[arg-type]
        return _operator_filter(filters, json_exists)  # type: ignore[arg-type]
    parts: list[str] = []
    bare: list[str] = []
    named_life: list[str] = []
    superseded = False
    for raw_key, value in (filters or {}).items():
        key = _lifecycle_name(FILTER_ALIASES.get(raw_key, raw_key), named_life)
        if key in FILTER_COLUMNS:
            if isinstance(value, int) and not isinstance(value, bool) and key != "memory_type":
                value = str(value)  # `-f chat_id=123` on the CLI reads 123 as a number; ids are text
            if not isinstance(value, str):
                raise InvalidInput(f"filter {raw_key!r} takes a string, got {type(value).__name__}")
            if key == "memory_type" and value not in ("episodic", "semantic", "procedural"):
                raise InvalidInput(f"filter memory_type must be episodic, semantic or procedural, got {value!r}")
            parts.append(eq(key, value))
        elif key == "category":
            parts.append(_category(value))
        elif key == "state":
            if value not in FILTER_STATES:
                raise InvalidInput(f"filter state must be one of {list(FILTER_STATES)}, got {value!r} "
                                   "(a metadata key named state: metadata.state)")
            superseded = superseded or value == "superseded"
            parts.append(_state(str(value)))
        elif key.startswith(METADATA_PREFIX):
            path = key[len(METADATA_PREFIX):].split(".")
            parts.append(json_path_eq("metadata", path, value))
        elif key in ("user_id", "id", "ts", "text", "hit_count", "vector", "sparse", "metadata"):
            raise InvalidInput(f"{key!r} is not a filter field; filter by {FILTER_FIELDS_HELP}")
        else:
            if not isinstance(key, str) or not _FIELD.match(key):
                raise InvalidInput(f"unknown filter field {key!r}; filter by {FILTER_FIELDS_HELP}")
            if key not in LIBRARY_KEYS:
                bare.append(key)
            parts.append(json_eq("metadata", key, value))
    return CallerFilter(and_(*parts), bare, superseded, named_life=named_life)


def _resolve(raw_key: object, bare: list[str], named_life: list[str]) -> str | tuple[str, ...]:
    """Where an operator filter's field lives: a column, "category", "state", or a metadata path
    ("metadata", key, ...); the same rule as the exact filters above."""
    key = FILTER_ALIASES.get(raw_key, raw_key) if isinstance(raw_key, str) else raw_key
    key = _lifecycle_name(key, named_life)
    if key in (*FILTER_COLUMNS, "ts", "category", "state"):
        return key  # type: ignore[return-value]
    if isinstance(key, str) and key.startswith(METADATA_PREFIX):
        path = key[len(METADATA_PREFIX):].split(".")
        if not path or len(path) > 8 or not all(path):
            raise InvalidInput("a metadata filter names 1 to 8 keys: metadata.<key> or metadata.<key>.<key>")
        return ("metadata", *(_json_key(k) for k in path))
    if key in ("user_id", "id", "text", "hit_count", "vector", "sparse", "metadata"):
        raise InvalidInput(f"{key!r} is not a filter field; filter by {FILTER_FIELDS_HELP}, or ts")
    if not isinstance(key, str) or not _FIELD.match(key):
        raise InvalidInput(f"unknown filter field {key!r}; filter by {FILTER_FIELDS_HELP}, or ts")
    if key not in LIBRARY_KEYS and key not in bare:
        bare.append(key)
    return ("metadata", key)


# The agent and run keys (store/agents.py): always a string when present, so `exists` on them is exact
# in Milvus (2.4 and later, milvus-lite); an agent scope's "shared" part is pushed down, not scanned.
_ID_KEYS = (("metadata", "agent_id"), ("metadata", "run_id"))


def _render(atom: filter_ops.Atom, json_exists: bool = True) -> str | None:
    """An atom's Milvus expression where Milvus evaluates it exactly (filter_ops.py says which), else None."""
    name, op, value = atom.field, atom.op, atom.value
    if op == "exists" and name in _ID_KEYS and json_exists:
        found = json_exists_expr("metadata", name[1])
        return found if value else f"not {found}"
    if name in (*FILTER_COLUMNS, "ts"):
        if op in ("in", "nin"):
            inside = in_(str(name), value) if value else NEVER
            return inside if op == "in" else f"not ({inside})"
        return cmp(str(name), filter_ops.MILVUS_OP[op], value) if op in filter_ops.MILVUS_OP else None
    values = value if op == "in" else [value] if op == "eq" else None
    if values is None or not all(isinstance(v, str) for v in values):
        return None  # numbers and booleans in JSON: Milvus' three-valued, loosely typed comparison
    if name in ("category", "state"):
        return None  # their defaults need JSON `exists` (not on Milvus 2.3): evaluated with the residual
    return or_(*(json_path_eq("metadata", list(name[1:]), v) for v in values)) or NEVER


def _operator_filter(filters: dict[str, object], json_exists: bool = True) -> CallerFilter:
    bare: list[str] = []
    named_life: list[str] = []
    tree = filter_ops.parse(filters, lambda key: _resolve(key, bare, named_life))
    pushed, residual = filter_ops.plan(tree, lambda atom: _render(atom, json_exists))
    rest = None if not residual else residual[0] if len(residual) == 1 else filter_ops.Node("AND", tuple(residual))
    superseded = "state" in filter_ops.fields_of(tree)  # a filter that names the state decides superseded itself
    return CallerFilter(and_(*pushed), bare, superseded, rest, named_life)


def ambiguous_field(key: str) -> InvalidInput:
    """The refusal of a bare `category` / `state` where the user's own metadata has that key too."""
    return InvalidInput(f"filter {key!r} is ambiguous: memories of this user have a metadata key {key!r}; write "
                        f"metadata.{key} for yours or lifecycle.{key} for the lifecycle's")


def unknown_field(key: str) -> InvalidInput:
    """The refusal of a bare key that is no field and no metadata key of any memory of this user."""
    return InvalidInput(f"unknown filter field {key!r} (no memory of this user has a metadata key {key!r}); "
                        f"filter by {FILTER_FIELDS_HELP}")


def json_path_eq(field: str, keys: list[str], value: object) -> str:
    """metadata["a"]["b"] == value."""
    if not keys or len(keys) > 8 or not all(keys):
        raise InvalidInput("a metadata filter names 1 to 8 keys: metadata.<key> or metadata.<key>.<key>")
    return f"{_field(field)}{''.join(f'[{literal(_json_key(k))}]' for k in keys)} == {literal(value)}"


def json_exists(field: str, *keys: str) -> str:
    """exists metadata["a"]: rows whose JSON has the key."""
    return f"exists {_field(field)}{''.join(f'[{literal(_json_key(k))}]' for k in keys)}"


json_exists_expr = json_exists  # _render's name for it (its own argument `json_exists` is the capability)


_LIFE_CATEGORY = 'metadata["life"]["category"]'
_LIFE_STATE = 'metadata["life"]["state"]'




def _category(value: object) -> str:
    known = [c.value for c in Category]
    if value not in known and not project_category(value):
        raise InvalidInput(f"filter category must be one of {known} or a project's own category name, got {value!r} "
                           "(a metadata key named category: metadata.category)")
    stored = f"{_LIFE_CATEGORY} == {literal(value)}"
    default = {"fact": eq("memory_type", "semantic"), "experience": cmp("memory_type", "!=", "semantic")}.get(str(value))
    if default is None:  # a memory without a lifecycle entry reads as fact (semantic) or experience
        return stored
    return or_(stored, and_(f"not exists {_LIFE_CATEGORY}", default))


def _state(value: str) -> str:
    current = json_missing("metadata", "life", "superseded_by")
    if value == "superseded":
        return 'exists metadata["life"]["superseded_by"]'
    if value == "archived":
        return and_(f"{_LIFE_STATE} == \"archived\"", current)
    return and_(or_(f"{_LIFE_STATE} == \"active\"", f"not exists {_LIFE_STATE}"), current)
