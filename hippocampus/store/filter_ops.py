"""Filter operators in mem0's syntax: `{"priority": {"gte": 3}}`, `{"AND": [...]}`, `{"OR": [...]}`,
`{"NOT": {...}}`, one syntax for every face (docs/filters.md).

A filter is parsed and checked whole before any work (`parse`: InvalidInput with one line for an
unknown operator, a wrong value type, a bad field, too deep or too large). Then it is split (`plan`):
what Milvus evaluates exactly is rendered through filters.py's escaping builder and pushed down;
the rest (the `residual`) is evaluated here in Python over the user's rows and reaches Milvus as
`id in [...]` (filter_check.py `checked_filter`). Why the split: measured on milvus-lite 3.2 (tests/store/
test_filter_ops.py), a JSON comparison is three-valued (`not (metadata["k"] == 1)` drops the rows
without `k`), `true == 1`, `in` on a JSON path is refused and `like` escapes differ between JSON and
VARCHAR; Milvus 2.3 has no `exists`. So pushed down are only: column atoms (chat_id, who,
memory_type, ts: never null) with eq/ne/gt/gte/lt/lte/in/nin, and, outside any NOT, a JSON or
category/state atom compared to a string (a positive string match is exact everywhere), and `exists` on
agent_id / run_id where the engine has it (store/agents.py: always strings when present).
Everything else (numbers and booleans in metadata, contains, icontains, exists, NOT over JSON) is
the residual. The semantics are two-valued and type-strict: a missing key or a value of another
type makes an atom false (and its NOT true); booleans equal only booleans; numbers compare with
numbers, strings with strings; `contains` is a substring of a string value or of a string element
of a list value; `icontains` the same after casefold.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidInput
from ..models import Category

OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains", "exists")
COMBINATORS = ("AND", "OR", "NOT")
MAX_DEPTH = 8  # nested AND/OR/NOT levels
MAX_ATOMS = 100  # conditions in one filter
MAX_LIST = 100  # values of one in / nin

# The one list of each enumerated field's values (filters.py builds on it).
FILTER_STATES: tuple[str, ...] = ("active", "archived", "superseded")
ENUM_VALUES: dict[str, tuple[str, ...]] = {"memory_type": ("episodic", "semantic", "procedural"),
                                           "category": tuple(c.value for c in Category), "state": FILTER_STATES}
# The project's own category names (MemoryConfig.categories) while `filter_check.checked_filter` compiles a filter for
# a retriever that knows them: the store itself does not read the config.
DECLARED_CATEGORIES: ContextVar[frozenset[str]] = ContextVar("declared_categories", default=frozenset())


def project_category(value: object) -> bool:
    """Whether `value` is one of the project's own categories (declared in the config)."""
    return isinstance(value, str) and value in DECLARED_CATEGORIES.get()
COLUMNS = ("chat_id", "who", "memory_type", "ts")
ENUMS = ("memory_type", "category", "state")  # fields with a closed set of values
_ORDERED = ("gt", "gte", "lt", "lte")
MILVUS_OP = {"eq": "==", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_MISSING = object()


@dataclass(frozen=True)
class Atom:
    """One condition: `field` is a column name, "category", "state", or ("metadata", key, ...)."""

    field: str | tuple[str, ...]
    op: str
    value: Any


@dataclass(frozen=True)
class Node:
    """AND / OR over `children`, or NOT over its single child."""

    kind: str
    children: tuple[Tree, ...] = field(default_factory=tuple)


Tree = Atom | Node


WILDCARD = "*"  # mem0's `{"key": "*"}`: the key is present (`{"exists": true}`); `{"eq": "*"}` is the text itself
DATE_KEYS = ("created_at", "updated_at")  # the library's epoch-second metadata keys, also compared with ISO dates
_DATE_FIELDS = tuple(("metadata", k) for k in DATE_KEYS)
_DATED_NAMES = tuple(f"metadata.{k}" for k in DATE_KEYS)


def uses_operators(filters: dict[str, Any] | None) -> bool:
    """True when the filter needs this module: a combinator key, an operator dict, a wildcard, a date key,
    or any value that is not a string (Milvus' JSON `==` takes true for 1: see above). A dict of plain strings
    only keeps filters.py's older path, pushed down whole."""
    return any(isinstance(k, str) and (k.upper() in COMBINATORS or k in DATE_KEYS or k in _DATED_NAMES)
               or not isinstance(v, str) or v == WILDCARD for k, v in (filters or {}).items())



# ---------------------------------------------------------------------- parsing and checking
class _Counter:
    def __init__(self) -> None:
        self.atoms = 0


def parse(filters: dict[str, Any], resolve: Callable[[str], str | tuple[str, ...]]) -> Tree:
    """The filter as a tree, every field resolved (`resolve`: filters.py's field rule) and every value
    checked. Raises InvalidInput naming the first problem."""
    return _parse_dict(filters, resolve, 1, _Counter())


def _parse_dict(raw: Any, resolve: Callable[[str], Any], depth: int, count: _Counter) -> Tree:
    if depth > MAX_DEPTH:
        raise InvalidInput(f"filter nested deeper than {MAX_DEPTH} levels of AND/OR/NOT")
    if not isinstance(raw, dict) or not raw:
        raise InvalidInput(f"a filter is a non-empty JSON object, got {_short(raw)}")
    parts: list[Tree] = []
    for key, value in raw.items():
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise InvalidInput(f"{key} takes a non-empty list of filters, got {_short(value)}")
            parts.append(Node(key, tuple(_parse_dict(v, resolve, depth + 1, count) for v in value)))
        elif key == "NOT":  # mem0 writes a list, meaning none of them holds
            if isinstance(value, list):
                if not value:
                    raise InvalidInput("NOT takes a filter or a non-empty list of filters (none of which may hold)")
                inner = [_parse_dict(v, resolve, depth + 1, count) for v in value]
                parts.append(Node("NOT", (inner[0] if len(inner) == 1 else Node("OR", tuple(inner)),)))
            else:
                parts.append(Node("NOT", (_parse_dict(value, resolve, depth + 1, count),)))
        elif isinstance(key, str) and key.upper() in COMBINATORS:
            raise InvalidInput(f"combinators are written {', '.join(COMBINATORS)} (upper case), got {key!r}")
        else:
            name = resolve(key)
            ops = value if isinstance(value, dict) else {"exists": True} if _wildcard(name, value) else {"eq": value}
            if not ops:
                raise InvalidInput(f"filter {key!r} has an empty operator object; use one of {', '.join(OPERATORS)}")
            for op, operand in ops.items():
                count.atoms += 1
                if count.atoms > MAX_ATOMS:
                    raise InvalidInput(f"a filter holds at most {MAX_ATOMS} conditions")
                parts.append(Atom(name, op, _check(key, name, op, operand)))
    return parts[0] if len(parts) == 1 else Node("AND", tuple(parts))


def _wildcard(name: Any, value: Any) -> bool:
    """`"*"` on a key of the caller's metadata means it is present; on a column, agent_id or run_id (ids that may
    be `*` themselves) and the enums it stays the text."""
    return value == WILDCARD and isinstance(name, tuple) and name not in (("metadata", "agent_id"), ("metadata", "run_id"))


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _check(key: str, name: Any, op: Any, value: Any) -> Any:
    """The operand of `op` on field `key`, checked (and for ts, an ISO datetime turned to epoch seconds)."""
    if op not in OPERATORS:
        raise InvalidInput(f"unknown filter operator {op!r} on {key!r}; use one of {', '.join(OPERATORS)}")
    if op == "exists":
        if not isinstance(value, bool):
            raise InvalidInput(f"filter {key!r}: exists takes true or false, got {_short(value)}")
        return value
    if op in ("in", "nin"):
        if not isinstance(value, list) or len(value) > MAX_LIST or not all(_scalar(v) for v in value):
            raise InvalidInput(f"filter {key!r}: {op} takes a list of at most {MAX_LIST} strings, numbers or booleans")
        return [_operand(key, name, op, v) for v in value]
    if op in ("contains", "icontains"):
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"filter {key!r}: {op} takes a non-empty string, got {_short(value)}")
        if name in ENUMS or name == "ts" or name in _DATE_FIELDS:
            raise InvalidInput(f"filter {key!r}: {op} applies to text fields and metadata, not to {key}")
        return value
    if not _scalar(value):
        raise InvalidInput(f"filter {key!r}: {op} takes a string, number or boolean, got {_short(value)}")
    if op in _ORDERED and (isinstance(value, bool) or name in ENUMS):
        raise InvalidInput(f"filter {key!r}: {op} compares numbers or text, not {_short(value)} on {key}")
    return _operand(key, name, op, value)


def _operand(key: str, name: Any, op: str, value: Any) -> Any:
    if name == "ts" or name in _DATE_FIELDS and isinstance(value, str):
        return _epoch(key, value)  # created_at / updated_at are epoch seconds: a date string compares as a date
    if name in ("chat_id", "who", ("metadata", "agent_id"), ("metadata", "run_id")):
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # `--filter '{"chat_id": 123}'`: ids are text
        if not isinstance(value, str):
            raise InvalidInput(f"filter {key!r}: {op} takes a string, got {type(value).__name__}")
    if name in ENUMS:
        if value not in ENUM_VALUES[name] and not (name == "category" and project_category(value)):
            raise InvalidInput(f"filter {key!r} must be one of {list(ENUM_VALUES[name])}, got {_short(value)}")
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        raise InvalidInput(f"filter {key!r}: numbers must be finite")
    return value


def _epoch(key: str, value: Any) -> int | float:
    """ts compares epoch seconds; an ISO datetime (naive: UTC) is taken too."""
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"filter {key!r} takes epoch seconds or an ISO datetime, got {_short(value)}") from None
        return int((when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        raise InvalidInput(f"filter {key!r} takes epoch seconds or an ISO datetime, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fields_of(tree: Tree) -> list[Any]:
    """Every field the filter names, in order."""
    if isinstance(tree, Atom):
        return [tree.field]
    return [f for child in tree.children for f in fields_of(child)]


# ---------------------------------------------------------------------- evaluation in Python
def value_of(record: Any, name: Any) -> Any:
    """The value a field has on a MemoryRecord (models.MemoryRecord), or _MISSING."""
    if name == "category":
        return record.life.category.value
    if name == "state":
        return "superseded" if record.life.superseded_by is not None else record.life.state.value
    if name == "memory_type":
        return record.memory_type.value
    if isinstance(name, str):
        return getattr(record, name)
    node: Any = record.metadata
    for key in name[1:]:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return isinstance(a, str) and isinstance(b, str) and a == b


def _order(a: Any, b: Any, op: str) -> bool:
    number = (int, float)
    if isinstance(a, bool) or not (isinstance(a, number) and isinstance(b, number) or isinstance(a, str) and isinstance(b, str)):
        return False
    return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]


def _holds(have: Any, text: str, fold: bool) -> bool:
    items = have if isinstance(have, list) else [have]
    if fold:
        return any(isinstance(s, str) and text.casefold() in s.casefold() for s in items)
    return any(isinstance(s, str) and text in s for s in items)


def atom_true(atom: Atom, have: Any) -> bool:
    """One condition against the value the record has (_MISSING when it has none)."""
    op, want = atom.op, atom.value
    if op == "exists":
        return (have is not _MISSING and have is not None) == want
    if have is _MISSING:
        return op in ("ne", "nin")
    if op == "eq":
        return _same(have, want)
    if op == "ne":
        return not _same(have, want)
    if op == "in":
        return any(_same(have, w) for w in want)
    if op == "nin":
        return not any(_same(have, w) for w in want)
    if op in _ORDERED:
        return _order(have, want, op)
    return _holds(have, want, op == "icontains")


def evaluate(tree: Tree, record: Any) -> bool:
    """The filter over one MemoryRecord, by the rules above."""
    if isinstance(tree, Atom):
        return atom_true(tree, value_of(record, tree.field))
    if tree.kind == "AND":
        return all(evaluate(c, record) for c in tree.children)
    if tree.kind == "OR":
        return any(evaluate(c, record) for c in tree.children)
    return not evaluate(tree.children[0], record)


# ---------------------------------------------------------------------- pushing down
def push(tree: Tree, render: Callable[[Atom], str | None], negated: bool = False) -> str | None:
    """The Milvus expression for `tree` when every part of it is exact there, else None. `render`
    gives an atom's expression (None: not exact in Milvus); a JSON atom is offered only outside NOT."""
    if isinstance(tree, Atom):
        if negated and not (isinstance(tree.field, str) and tree.field in COLUMNS):
            return None
        return render(tree)
    if tree.kind == "NOT":
        inner = push(tree.children[0], render, not negated)
        return None if inner is None else f"not ({inner})"
    parts = [push(c, render, negated) for c in tree.children]
    if any(p is None for p in parts):
        return None
    return f" {tree.kind.lower()} ".join(f"({p})" for p in parts)


def plan(tree: Tree, render: Callable[[Atom], str | None]) -> tuple[list[str], list[Tree]]:
    """Split a filter's top-level AND into pushed-down expressions and residual parts."""
    parts = tree.children if isinstance(tree, Node) and tree.kind == "AND" else (tree,)
    pushed, residual = [], []
    for part in parts:
        expr = push(part, render)
        if expr is None:
            residual.append(part)
        else:
            pushed.append(expr)
    return pushed, residual
