"""The filter property's parts, shared by milvus-lite (test_filter_ops_property.py) and the Milvus 2.3
server (test_store_servers.py): a small store of memories whose metadata mixes types on purpose
(ints, floats, booleans, numeric strings, lists, nested objects, missing keys), a hypothesis strategy
of filters in mem0's syntax, and an evaluator of those filters written from docs/filters.md alone,
independent of hippocampus/store/filter_ops.py."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.models import MemoryRecord

ALL = ["episodic", "semantic", "procedural"]
BASE_TS = 1_750_000_000
METADATA: list[dict[str, Any]] = [
    {"n": 1, "s": "Hello World"}, {"n": 2.5}, {"n": "1"}, {"n": True, "s": "hello"}, {"n": 0, "tags": ["Red", "blue"]},
    {"s": "50%_off"}, {"s": "50x off", "n": -3}, {"tags": ["green"], "nest": {"k": 3}}, {"nest": {"k": "x"}, "n": False},
    {}, {"s": "", "n": 7, "tags": []}, {"nest": {"k": None}, "s": "ÉCOLE"},
]
KINDS = ["episodic", "semantic", "procedural"]
AGENTS = {1: "planner", 2: "coder"}


def fill(m: Memory, user: str) -> list[int]:
    """The memories of the property, for `user` (one row per METADATA entry)."""
    items = [{"text": f"note {i} about the garden", "user_id": user, "chat_id": f"c{i % 3}", "who": "ana" if i % 2 else "ben",
              "memory_type": KINDS[i % 3] if i % 4 else "episodic", "ts": BASE_TS + 1000 * i, "metadata": md,
              **({"agent_id": AGENTS[i % 4], "run_id": f"r{i % 2}"} if i % 4 in (1, 2) else {})}  # docs/agents.md; else shared
             for i, md in enumerate(METADATA)]
    ids = m.add_many(items)
    m.curate(ids[1], user, category="preference")
    m.curate(ids[4], user, category="todo")
    return ids


# ---------------------------------------------------------------------- the reference evaluator
_ABSENT = ("absent",)


def _value(r: MemoryRecord, field: str) -> Any:
    if field in ("chat_id", "who", "ts"):
        return getattr(r, field)
    if field == "memory_type":
        return r.memory_type.value
    if field == "category":
        return r.life.category.value
    if field == "state":
        return "superseded" if r.life.superseded_by is not None else r.life.state.value
    path = field.split(".")[1:] if field.startswith("metadata.") else [field]
    node: Any = r.metadata
    for key in path:
        if type(node) is not dict or key not in node:
            return _ABSENT
        node = node[key]
    return node


def _kind(v: Any) -> str:
    return "bool" if type(v) is bool else "num" if type(v) in (int, float) else "str" if type(v) is str else "other"


def _equal(a: Any, b: Any) -> bool:
    return _kind(a) == _kind(b) != "other" and a == b


def _check(have: Any, op: str, want: Any) -> bool:
    if op == "exists":
        return (have is not _ABSENT and have is not None) is want
    if op == "ne":
        return not _check(have, "eq", want)
    if op == "nin":
        return not _check(have, "in", want)
    if have is _ABSENT:
        return False
    if op == "eq":
        return _equal(have, want)
    if op == "in":
        return any(_equal(have, w) for w in want)
    if op in ("gt", "gte", "lt", "lte"):
        if _kind(have) != _kind(want) or _kind(have) not in ("num", "str"):
            return False
        return {"gt": have > want, "gte": have >= want, "lt": have < want, "lte": have <= want}[op]
    texts = [x for x in (have if type(have) is list else [have]) if type(x) is str]
    if op == "contains":
        return any(want in t for t in texts)
    return any(want.casefold() in t.casefold() for t in texts)  # icontains


def matches(f: dict[str, Any], r: MemoryRecord) -> bool:
    """Every key of `f` holds (AND); AND / OR take lists, NOT one filter; a value that is no dict means eq."""
    for key, value in f.items():
        if key == "AND" and not all(matches(x, r) for x in value):
            return False
        if key == "OR" and not any(matches(x, r) for x in value):
            return False
        if key == "NOT" and matches(value, r):
            return False
        if key not in ("AND", "OR", "NOT"):
            ops = value if isinstance(value, dict) else {"eq": value}
            if not all(_check(_value(r, key), op, want) for op, want in ops.items()):
                return False
    return True


# ---------------------------------------------------------------------- the strategy
_SCALARS = st.sampled_from([1, 0, 2.5, -3, 7, 3, "1", "hello", "Hello World", "x", "", True, False, "50%_off", "ÉCOLE"])
_NUMBERS = st.sampled_from([0, 1, 2, 2.5, -3, 3, 7, "1", "hello", "H", "a"])
_TEXTS = st.sampled_from(["ell", "HELLO", "%", "_", "50%", "o", "re", "Re", "é", "école", "x off", "gr"])
_META = ["n", "metadata.n", "s", "metadata.s", "tags", "metadata.nest.k", "nest"]


def _atom(field: str) -> st.SearchStrategy[dict[str, Any]]:
    if field in ("memory_type", "category", "state"):
        values = {"memory_type": KINDS, "category": ["preference", "todo", "experience", "fact"], "state": ["active", "archived"]}[field]
        one = st.sampled_from(values)
        ops = st.one_of(one, st.builds(lambda o, v: {o: v}, st.sampled_from(["eq", "ne"]), one),
                        st.builds(lambda o, v: {o: v}, st.sampled_from(["in", "nin"]), st.lists(one, max_size=3)))
        return ops.map(lambda v: {field: v})
    if field == "ts":
        when = st.integers(BASE_TS - 500, BASE_TS + 12_500)
        return st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte"]), when)
    if field in ("agent_id", "run_id"):  # metadata keys the library writes, absent on a shared memory
        one = st.sampled_from(["planner", "coder", "r0", "r1", "x"])
        return st.one_of(one.map(lambda v: {field: v}), st.booleans().map(lambda v: {field: {"exists": v}}),
                         st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["ne", "contains"]), one),
                         st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["in", "nin"]), st.lists(one, max_size=3)))
    if field in ("chat_id", "who"):
        one = st.sampled_from(["c0", "c1", "c2", "ana", "ben", "c"])
        return st.one_of(one.map(lambda v: {field: v}),
                         st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["ne", "gt", "lte", "contains", "icontains"]), one),
                         st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["in", "nin"]), st.lists(one, max_size=3)))
    return st.one_of(
        _SCALARS.map(lambda v: {field: v}),
        st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["eq", "ne"]), _SCALARS),
        st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["gt", "gte", "lt", "lte"]),
                  _NUMBERS.filter(lambda v: type(v) is not bool)),
        st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["in", "nin"]), st.lists(_SCALARS, max_size=3)),
        st.builds(lambda o, v: {field: {o: v}}, st.sampled_from(["contains", "icontains"]), _TEXTS),
        st.booleans().map(lambda v: {field: {"exists": v}}),
    )


ATOMS = st.sampled_from(["chat_id", "who", "memory_type", "ts", "category", "state", "agent_id", "run_id", *_META]).flatmap(_atom)
FILTERS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"AND": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"OR": xs}),
        inner.map(lambda x: {"NOT": x}),
        st.tuples(ATOMS, inner).map(lambda ab: {**ab[1], **ab[0]} if not set(ab[0]) & set(ab[1]) else ab[0]),
    ),
    max_leaves=5,
)


def check(m: Memory, user: str, f: dict[str, Any], everything: list[MemoryRecord]) -> None:
    """list and search with `f` return exactly the memories the reference evaluator picks."""
    expected = {r.id for r in everything if matches(f, r)}
    listed = {r.id for r in m.get_all(user, filters=f)}
    assert listed == expected, (f, sorted(listed - expected), sorted(expected - listed))
    top_kind = f.get("memory_type")
    kinds = None if isinstance(top_kind, str) else ALL
    res = m.search("garden note", user_id=user, limit=50, filters=f, memory_types=kinds)
    found = {h.id for h in res.all}
    assert found == expected, (f, sorted(found - expected), sorted(expected - found))
