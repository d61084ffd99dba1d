"""Metadata that cannot hurt (issue 29, item 5): any JSON a caller sends as metadata is either
refused at once with InvalidInput naming the limit (nested deeper than 32 levels, larger than 64 KiB,
a non-string or over-long key, a NaN or infinite number, an integer beyond int64, a key the library
owns), with nothing written; or it is accepted and then every verb works on it: get, list/page,
search (also filtered by one of its keys), update, JSONL export and import, a consolidation merge,
delete and undo. Real milvus-lite, one collection for the module."""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.consolidation.job import ConsolidationJob
from hippocampus.errors import InvalidInput
from hippocampus.models import HistoryAction
from hippocampus.store import filters as F
from hippocampus.testing import DeterministicEmbedder
from hippocampus.validation import OWNED_KEYS
from tests.consolidation_helpers import episode_row, merge_union, scripted_chat, vector_pair

MAX_DEPTH, MAX_BYTES, MAX_KEY_BYTES = 32, 65536, 256
T0 = 1_767_225_600

keys = st.one_of(st.text(max_size=12), st.sampled_from(["k", "time", "thing", "a.b", 'q"uote', "x" * 256]))
scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=30), st.integers(-(2**63), 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False))
trees = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=12)
plain = st.dictionaries(keys, trees, max_size=5)
bad_values = st.one_of(st.sampled_from([float("nan"), float("inf"), -float("inf"), 2**63, -(2**63) - 1, 10**30, {1, 2}, b"bytes"]))
bad_keys = st.one_of(st.sampled_from(["life", "created_at", "merge_pending", "x" * 257, "é" * 129]),
                     st.integers(), st.floats(allow_nan=False), st.booleans())


def _nest(depth: int, leaf: Any, kinds: list[bool]) -> Any:
    """`leaf` inside `depth - 1` containers (a dict where kinds says so, else a list)."""
    value = leaf
    for i in range(depth - 1):
        value = {"n": value} if kinds[i % len(kinds)] else [value]
    return value


deep = st.builds(lambda d, leaf, kinds: {"deep": _nest(d, leaf, kinds)}, st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3),
                 scalars, st.lists(st.booleans(), min_size=1, max_size=4))
big = st.builds(lambda n, k: {k: "m" * n}, st.integers(MAX_BYTES - 40, MAX_BYTES + 40), st.sampled_from(["big", "大"]))
bad_value = st.builds(lambda d, path, bad: {**d, "bad": _nest(path, bad, [True, False])}, plain, st.integers(1, 3), bad_values)
bad_key = st.builds(lambda d, key, v: {**d, key: v}, plain, bad_keys, scalars)
metadata = st.one_of(plain, plain, plain, deep, deep, big, bad_value, bad_key)
texts = st.text(min_size=1, max_size=40).filter(lambda t: t.strip())


def acceptable(meta: dict[Any, Any], owned_ok: bool = False) -> bool:
    """The limits as documented, written apart from the implementation."""
    def ok(value: Any, depth: int) -> bool:
        if isinstance(value, dict):
            return depth <= MAX_DEPTH and all(isinstance(k, str) and len(k.encode("utf-8")) <= MAX_KEY_BYTES and ok(v, depth + 1)
                                              for k, v in value.items())
        if isinstance(value, list):
            return depth <= MAX_DEPTH and all(ok(v, depth + 1) for v in value)
        if isinstance(value, float):
            return math.isfinite(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return -(2**63) <= value <= 2**63 - 1
        return value is None or isinstance(value, (str, bool))

    return (ok(meta, 1) and (owned_ok or not set(meta) & set(OWNED_KEYS))
            and len(json.dumps(meta, ensure_ascii=False).encode("utf-8")) <= MAX_BYTES)


@pytest.fixture(scope="module")
def mem(shared_db: Path) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"mp_{uuid.uuid4().hex[:10]}",
               embedder=DeterministicEmbedder(8, lexical=False), llm=scripted_chat({"MergeResult": merge_union}),
               t_merge_high=0.85, t_amb_low=0.65)
    yield m
    m.close()


def _holds(stored: dict[str, Any], meta: dict[str, Any]) -> bool:
    return all(k in stored and stored[k] == v for k, v in meta.items())


@settings(max_examples=int(os.environ.get("META_EXAMPLES", 30)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(meta=metadata, text=texts)
@example(meta={"deep": _nest(300, 1, [True])}, text="nested 300 levels")  # the case: stored, then every read failed
@example(meta={"deep": _nest(MAX_DEPTH - 1, "leaf", [True, False])}, text="exactly at the limit")
@example(meta={"k": float("nan")}, text="nan")
@example(meta={1: "int key"}, text="int key")
def test_metadata_is_refused_or_works_with_every_verb(mem: Memory, tmp_path_factory, meta: dict[Any, Any], text: str):
    user = f"u-{uuid.uuid4().hex[:10]}"
    event("refused" if not acceptable(meta) else "accepted")
    if not acceptable(meta):
        with pytest.raises(InvalidInput) as refused:
            mem.add(text, user_id=user, metadata=meta)
        assert "\n" not in str(refused.value)
        with pytest.raises(InvalidInput):
            mem.add_many([{"text": text, "user_id": user, "metadata": meta}])
        if not acceptable(meta, owned_ok=True):  # a filter may name the library's keys
            with pytest.raises(InvalidInput):
                mem.search(text, user_id=user, filters=meta)
        assert mem.get_all(user) == [] and mem.store.history(F.eq("user_id", user)) == []
        return

    (mid,) = mem.add(text, user_id=user, metadata=meta).ids
    assert _holds(mem.get(mid, user).metadata, meta)
    assert [r.id for r in mem.page(user).items] == [mid] and mem.browse(user).total == 1
    mem.search(text, user_id=user)
    scalar = next(((k, v) for k, v in meta.items()  # filters take identifier keys (store/filters.py)
                   if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", k) and isinstance(v, (str, int)) and not isinstance(v, bool)), None)
    if scalar is not None:
        found = mem.search(text, user_id=user, filters=dict([scalar]), mode="dense")
        assert mid in [h.id for h in found.episodic]
    mem.update(mid, text + " (edited)", user_id=user, metadata={"edited": True})
    assert mem.get(mid, user).metadata["edited"] is True

    path = tmp_path_factory.mktemp("jsonl") / "backup.jsonl"
    assert mem.export_jsonl(user, path) == 1
    other = f"i-{uuid.uuid4().hex[:10]}"
    assert len(mem.import_jsonl(other, path).created) == 1
    (imported,) = mem.get_all(other)
    assert imported.metadata == mem.get(mid, user).metadata | {k: imported.metadata[k] for k in ("created_at", "updated_at", "source_hash")}

    _merge_pair(mem, meta)

    mem.delete(mid, user)
    (deleted,) = [e for e in mem.store.history(F.eq("user_id", user)) if e["action"] == HistoryAction.DELETED.value]
    back = mem.undo(deleted["event_id"], user)
    assert mem.get(back.memory_ids[0], user).metadata["edited"] is True


def _merge_pair(mem: Memory, meta: dict[str, Any]) -> None:
    """Two episodes carrying `meta` merge, and the merge can be undone."""
    user = f"m-{uuid.uuid4().hex[:10]}"
    va, vb = vector_pair(0.95, seed=7)
    rows = [episode_row(user, t, v, T0 + i * 60) for i, (t, v) in enumerate((("first telling", va), ("second telling", vb)))]
    for row in rows:
        row["metadata"] = {**row["metadata"], **meta}
    a, b = mem.store.insert(rows)
    ConsolidationJob(mem.store, mem.embedder, mem.llm, mem.config, write_lock=mem.ctx.write_lock).run(user)
    (merged,) = mem.get_all(user)
    assert _holds(merged.metadata, {k: v for k, v in meta.items() if k not in ("context", "thing", "time", "chatid", "who")})
    event = next(e for e in mem.store.history(F.eq("user_id", user))
                 if e["memory_id"] == a and e["action"] == HistoryAction.MERGED.value)
    mem.undo(event["event_id"], user)
    assert sorted(r.text for r in mem.get_all(user)) == ["first telling", "second telling"]


@pytest.mark.parametrize("meta, names", [
    ({"deep": _nest(MAX_DEPTH + 1, 1, [True])}, "32 levels"),
    ({"deep": _nest(10_000, 1, [False])}, "32 levels"),
    ({"big": "m" * MAX_BYTES}, "64 KiB"),
    ({"k" * 257: 1}, "256 UTF-8 bytes"),
    ({1: "x"}, "keys must be strings"),
    ({"k": [1.0, float("-inf")]}, "finite"),
    ({"k": 10**5000}, "64 bits"),
    ({"k": {"set"}}, "set at metadata['k'] is not a JSON value"),
])
def test_refusals_name_the_limit_on_one_line(mem: Memory, meta: dict[Any, Any], names: str):
    user = f"r-{uuid.uuid4().hex[:10]}"
    with pytest.raises(InvalidInput, match=re.escape(names)) as refused:
        mem.add("refused", user_id=user, metadata=meta)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300
    assert mem.get_all(user) == []


@pytest.mark.parametrize("depth, names", [(MAX_DEPTH + 1, "32 levels"), (100_000, "nested too deeply")])
def test_an_import_with_deep_metadata_is_refused_whole(mem: Memory, tmp_path: Path, depth: int, names: str):
    """A hand-made backup line nested past the limit (or past the JSON parser's stack): InvalidInput, nothing imported."""
    user = f"j-{uuid.uuid4().hex[:10]}"
    mem.add("kept", user_id=user)
    path = tmp_path / "backup.jsonl"
    mem.export_jsonl(user, path)
    line = json.loads(path.read_text(encoding="utf-8"))
    deep = '{"n":' * (depth - 1) + "1" + "}" * (depth - 1)
    line["metadata"] = {"deep": "PLACEHOLDER"}
    path.write_text(json.dumps(line).replace('"PLACEHOLDER"', deep) + "\n", encoding="utf-8")
    other = f"k-{uuid.uuid4().hex[:10]}"
    with pytest.raises(InvalidInput, match=names) as refused:
        mem.import_jsonl(other, path)
    assert "\n" not in str(refused.value) and mem.get_all(other) == []
