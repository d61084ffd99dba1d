"""Seed 002's Properties 1, 2, 5, 6 and 14, filter escaping and settings precedence, as hypothesis
properties against real milvus-lite.

One Memory per module (opening a store costs a second or more), except for the two properties that
count rows across the whole store (they get their own); each example works under its own fresh user
id, so examples never see each other's rows. The embedder is the plain lexical
`DeterministicEmbedder` (tests/core_support.py): these properties are about storage, scoping and
limits, not about meaning, and it keeps 100 examples per property fast.

Extra fields (Property 1) are stored in the record's JSON `metadata` field, beside seed 002's
episodic keys (context, thing, time, chatid, who); they come back unchanged from get, get_all and
search. Milvus' dynamic fields are not used for them: one JSON object keeps any key (even ones
that are not identifiers) and cannot collide with a column. `created_at` / `updated_at` in
metadata are the library's bookkeeping (epoch seconds).
"""

from __future__ import annotations

import json
import os
import unicodedata
import uuid
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hippocampus import ConfigError, InvalidInput, Memory, MemoryConfig, NotFound
from hippocampus.models import MemoryType, ts_to_iso
from hippocampus.store import filters as F
from hippocampus.testing import DeterministicEmbedder
from hippocampus.validation import OWNED_KEYS, TS_MAX

EPISODIC_KEYS = {"context", "thing", "time", "chatid", "who"}


@pytest.fixture(scope="module")
def mem(tmp_path_factory):
    m = Memory(milvus_uri=str(tmp_path_factory.mktemp("props") / "memories.db"), embedder=DeterministicEmbedder())
    yield m
    m.close()


@pytest.fixture
def own_mem(tmp_path):
    """A store of the test's own, for the properties that count rows across the whole store: on the
    module's store, grown by the properties before them, milvus-lite's whole-store scans made them
    about 8x slower."""
    m = Memory(milvus_uri=str(tmp_path / "memories.db"), embedder=DeterministicEmbedder())
    yield m
    m.close()


def fresh_user() -> str:
    return f"u-{uuid.uuid4().hex[:12]}"


# ------------------------------------------------------------------ strategies
safe_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
memory_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=80).filter(lambda t: t.strip())
json_scalar = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | safe_text
json_value = st.recursive(json_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(safe_text, inner, max_size=4), max_leaves=12)
metadata_key = safe_text.filter(lambda k: k not in OWNED_KEYS)
FRAGMENTS = ['"', "'", "\\", " or ", "||", "&&", " and ", "==", "!=", " in ", "[", "]", "(", ")", "not ", "like",
             "user_id", "%", "*", "中文", "用户", "🙂", "👨‍👩‍👧", " ", "\t", "\n", "\r", "\x00", "\x1b", "\u0085", "x", "1"]
adversarial_id = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30),
    st.just('x" or user_id != "'),
)


SAFE_FRAGMENTS = [f for f in FRAGMENTS if not any(unicodedata.category(c) == "Cc" for c in f)]
valid_id = st.one_of(
    st.lists(st.sampled_from(SAFE_FRAGMENTS), min_size=1, max_size=8).map("".join),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30),
).filter(lambda v: v.strip() != "")


def refused_id(value: str) -> bool:
    """What validation.check_id refuses: blank, control characters, more than 128 UTF-8 bytes."""
    return (not value.strip() or any(unicodedata.category(c) == "Cc" for c in value)
            or len(value.encode("utf-8")) > 128)


# ------------------------------------------------------------------ Property 1
# **Feature: ai-memory-system, Property 1: Dynamic Field Storage Consistency**
@given(metadata=st.dictionaries(metadata_key, json_value, min_size=1, max_size=6), text=memory_text)
def test_property_1_dynamic_field_storage_consistency(mem: Memory, metadata: dict[str, Any], text: str):
    """
    **Validates: Requirements 1.4**
    For any additional metadata field, stored with a memory, get / get_all / search return the same value.
    """
    user = fresh_user()
    mid = mem.add(text, user_id=user, metadata=metadata).ids[0]
    expected = json.loads(json.dumps(metadata))  # JSON's view of the values (tuples become lists, etc.)
    for record in (mem.get(mid, user_id=user), mem.get_all(user)[0], mem.search(text, user_id=user, mode="dense").episodic[0].memory):
        assert record.id == mid
        for key, value in expected.items():
            assert record.metadata[key] == value
        for key in EPISODIC_KEYS - set(expected):  # seed 002's keys are still there beside the extra ones
            assert key in record.metadata


def test_dynamic_fields_the_store_cannot_hold_are_refused_before_writing(mem: Memory):
    user = fresh_user()
    for bad in ({"n": 2**64}, {"deep": [{"n": -(2**63) - 1}]}, {"s": "\ud800"}, {"created_at": "yesterday"}, {"f": float("nan")}):
        with pytest.raises(InvalidInput):
            mem.add("refused", user_id=user, metadata=bad)
    assert mem.get_all(user) == []


# ------------------------------------------------------------------ Property 2
# **Feature: ai-memory-system, Property 2: Episodic Memory Field Completeness**
@given(text=memory_text, chat_id=valid_id, who=st.none() | valid_id, ts=st.integers(0, TS_MAX))
def test_property_2_episodic_memory_field_completeness(mem: Memory, text: str, chat_id: str, who: str | None, ts: int):
    """
    **Validates: Requirements 2.3**
    Every stored episodic memory has user_id, ts, chat_id, memory_type="episodic", hit_count=0, text,
    a vector of the embedder's dimension, and metadata with context, thing, time, chatid, who.
    """
    assume(not refused_id(chat_id) and (who is None or not refused_id(who)))
    user = fresh_user()
    mid = mem.add(text, user_id=user, chat_id=chat_id, who=who, ts=ts).ids[0]
    rec = mem.get(mid, user_id=user)
    assert (rec.user_id, rec.ts, rec.chat_id, rec.memory_type, rec.hit_count, rec.text) == (
        user, ts, chat_id, MemoryType.EPISODIC, 0, text)
    assert rec.who == (who if who is not None else user)
    assert EPISODIC_KEYS <= set(rec.metadata)
    assert rec.metadata["chatid"] == chat_id and rec.metadata["who"] == rec.who
    assert rec.metadata["thing"] == text and rec.metadata["time"] == ts_to_iso(ts)
    vector = mem.store.vectors([mid])[mid]
    assert len(vector) == mem.embedder.dim


# ------------------------------------------------------------------ Property 5
# **Feature: ai-memory-system, Property 5: Search Result Type Coverage**
@given(
    n_episodic=st.integers(0, 4), n_semantic=st.integers(0, 4), n_other=st.integers(0, 3),
    query=memory_text, mode=st.sampled_from(["dense", "hybrid"]),
)
def test_property_5_search_result_type_coverage(mem: Memory, n_episodic: int, n_semantic: int, n_other: int, query: str, mode: str):
    """
    **Validates: Requirements 3.2**
    For any query and user, search returns that user's episodic and semantic memories (each kind
    when it exists, in its own list) and nothing of other users.
    """
    user, other = fresh_user(), fresh_user()
    items = ([{"text": f"episode {i} {query}", "user_id": user} for i in range(n_episodic)]
             + [{"text": f"fact {i}", "user_id": user, "memory_type": "semantic"} for i in range(n_semantic)]
             + [{"text": f"{query} other {i}", "user_id": other, "memory_type": t} for i in range(n_other) for t in ("episodic", "semantic")])
    if items:
        mem.add_many(items)
    result = mem.search(query, user_id=user, limit=10, mode=mode)
    assert len(result.episodic) == n_episodic and len(result.semantic) == n_semantic
    assert all(h.memory.memory_type is MemoryType.EPISODIC for h in result.episodic)
    assert all(h.memory.memory_type is MemoryType.SEMANTIC for h in result.semantic)
    assert all(h.memory.user_id == user for h in result.all)
    only = mem.search(query, user_id=user, limit=10, mode=mode, memory_type="semantic")
    assert only.episodic == [] and len(only.semantic) == n_semantic


# ------------------------------------------------------------------ Property 6
# **Feature: ai-memory-system, Property 6: Search Result Limit Enforcement**
@given(
    k_episodic=st.integers(0, 6), k_semantic=st.integers(0, 6), n_episodic=st.integers(0, 8), n_semantic=st.integers(0, 8),
    limit=st.none() | st.integers(0, 10), mode=st.sampled_from(["dense", "hybrid", "bm25"]),
)
def test_property_6_search_result_limit_enforcement(
    mem: Memory, k_episodic: int, k_semantic: int, n_episodic: int, n_semantic: int, limit: int | None, mode: str
):
    """
    **Validates: Requirements 3.3**
    For any search, at most k_episodic episodic and k_semantic semantic memories come back (or at
    most `limit` of each when given); with dense search exactly min(k, how many exist).
    """
    user = fresh_user()
    items = ([{"text": f"shared words episode {i}", "user_id": user} for i in range(n_episodic)]
             + [{"text": f"shared words fact {i}", "user_id": user, "memory_type": "semantic"} for i in range(n_semantic)])
    if items:
        mem.add_many(items)
    base = mem.config
    mem.config = base.model_copy(update={"k_episodic": k_episodic, "k_semantic": k_semantic})
    try:
        result = mem.search("shared words", user_id=user, limit=limit, mode=mode)
    finally:
        mem.config = base
    cap_e = k_episodic if limit is None else limit
    cap_s = k_semantic if limit is None else limit
    assert len(result.episodic) <= cap_e and len(result.semantic) <= cap_s
    assert len(result.episodic) == min(cap_e, n_episodic)  # every memory shares the query's words
    assert len(result.semantic) == min(cap_s, n_semantic)


# ------------------------------------------------------------------ Property 14
# **Feature: ai-memory-system, Property 14: Reset Operation Completeness**
@given(user=valid_id, n_episodic=st.integers(0, 5), n_semantic=st.integers(0, 3))
def test_property_14_reset_operation_completeness(own_mem: Memory, user: str, n_episodic: int, n_semantic: int):
    """
    **Validates: Requirements 8.5**
    For any user_id, after reset(user_id) no memory of that user remains (nor its history), and
    no other user's memory is touched.
    """
    mem = own_mem
    assume(not refused_id(user))
    user = f"{user}{uuid.uuid4().hex[:6]}"  # unique per example, adversarial all the same
    assume(len(user.encode("utf-8")) <= 128)
    neighbour = fresh_user()
    keep = mem.add_many([{"text": f"neighbour {i}", "user_id": neighbour} for i in range(2)])
    items = ([{"text": f"episode {i}", "user_id": user} for i in range(n_episodic)]
             + [{"text": f"fact {i}", "user_id": user, "memory_type": "semantic"} for i in range(n_semantic)])
    ids = mem.add_many(items) if items else []
    assert mem.reset(user) == n_episodic + n_semantic
    assert mem.get_all(user) == [] and mem.store.count(F.eq("user_id", user)) == 0
    assert len(mem.search("episode fact", user_id=user, mode="dense")) == 0
    assert mem.store.history(F.eq("user_id", user)) == []
    assert mem.store.count(F.in_("id", ids)) == 0
    if ids:
        with pytest.raises(NotFound):
            mem.get(ids[0], user_id=user)
        with pytest.raises(NotFound):
            mem.history(ids[-1], user_id=user)
    assert [r["id"] for r in mem.store.query(F.eq("user_id", neighbour), limit=10)] == keep


# ------------------------------------------------------------------ filter escaping / tenant isolation
@pytest.fixture
def victims(own_mem: Memory) -> dict[str, list[int]]:
    mem = own_mem
    out = {}
    for victim in ("alice", 'x" or user_id != "', "中文用户", "🙂"):
        out[victim] = mem.add_many([{"text": f"{victim}'s secret {i}", "user_id": victim} for i in range(2)])
    return out


def assert_victims_intact(mem: Memory, victims: dict[str, list[int]]) -> None:
    everything = [i for ids in victims.values() for i in ids]
    rows = {r["id"]: r for r in mem.store.query(F.in_("id", everything), fields=["id", "user_id", "text"], limit=len(everything))}
    for victim, ids in victims.items():
        assert [(rows[i]["user_id"], rows[i]["text"]) for i in ids] == [(victim, f"{victim}'s secret {n}") for n in range(2)]
    assert mem.store.count(F.in_("user_id", list(victims))) == len(everything)  # and no row was added to them


# **Feature: ai-memory-system, Property: Filter Escaping Tenant Isolation**
@given(attacker=adversarial_id, pick=st.integers(0, 3))
def test_property_filter_escaping_tenant_isolation(own_mem: Memory, victims: dict[str, list[int]], attacker: str, pick: int):
    """
    **Validates: Requirements 8.5, 3.2**
    A user id made of quotes, backslashes, `or`, `||`, newlines, tabs, Chinese or emoji reads and
    changes only its own rows; one the store cannot hold (control characters, blank, over 128
    bytes) is refused with InvalidInput and changes nothing.
    """
    mem = own_mem
    attacker = f"{uuid.uuid4().hex[:6]}{attacker}"  # unique per example; the payload's end (a closing quote...) stays
    total = mem.store.count()  # every row of every user
    if refused_id(attacker):
        for call in (lambda: mem.add("x", user_id=attacker), lambda: mem.get_all(attacker), lambda: mem.reset(attacker),
                     lambda: mem.search("secret", user_id=attacker), lambda: mem.get(victims["alice"][0], user_id=attacker)):
            with pytest.raises(InvalidInput):
                call()
        assert mem.store.count() == total
        assert_victims_intact(mem, victims)
        return
    own = mem.add("attacker's own note about secrets", user_id=attacker).ids[0]
    assert [r.id for r in mem.get_all(attacker)] == [own]
    hits = mem.search("secret", user_id=attacker, limit=50, mode="hybrid").all
    assert [h.id for h in hits] == [own]
    ids = list(victims.values())[pick]  # one victim per example, chosen by hypothesis
    with pytest.raises(NotFound):
        mem.get(ids[0], user_id=attacker)
    with pytest.raises(NotFound):
        mem.update(ids[0], "overwritten", user_id=attacker)
    with pytest.raises(NotFound):
        mem.delete(ids[1], user_id=attacker)
    with pytest.raises(NotFound):
        mem.history(ids[0], user_id=attacker)
    assert mem.reset(attacker) == 1
    assert mem.store.count() == total
    assert_victims_intact(mem, victims)


# ------------------------------------------------------------------ settings precedence
_UNSET = st.none()


# **Feature: ai-memory-system, Property: Settings Precedence**
@given(
    yaml_k=_UNSET | st.integers(0, 1000), env_k=_UNSET | st.integers(0, 1000), kw_k=_UNSET | st.integers(0, 1000),
    yaml_mode=_UNSET | st.sampled_from(["hybrid", "dense", "bm25"]), env_mode=_UNSET | st.sampled_from(["hybrid", "dense", "bm25"]),
)
def test_property_settings_precedence(tmp_path_factory, yaml_k, env_k, kw_k, yaml_mode, env_mode):
    """
    **Validates: Requirements 1.1**
    Every setting comes from the highest layer that sets it: keyword > HIPPOCAMPUS_* env > hippocampus.yaml > default.
    """
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    lines = [f"k_episodic: {yaml_k}" if yaml_k is not None else "", f"search_mode: {yaml_mode}" if yaml_mode else ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {"HIPPOCAMPUS_CONFIG": str(path)}
    if env_k is not None:
        env["HIPPOCAMPUS_K_EPISODIC"] = str(env_k)
    if env_mode is not None:
        env["HIPPOCAMPUS_SEARCH_MODE"] = env_mode
    saved = {k: os.environ.get(k) for k in ("HIPPOCAMPUS_CONFIG", "HIPPOCAMPUS_K_EPISODIC", "HIPPOCAMPUS_SEARCH_MODE")}
    try:
        for key in saved:
            os.environ.pop(key, None)
        os.environ.update(env)
        cfg = MemoryConfig(**({"k_episodic": kw_k} if kw_k is not None else {}))
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value
    assert cfg.k_episodic == next(v for v in (kw_k, env_k, yaml_k, 5) if v is not None)
    assert cfg.search_mode == next(v for v in (env_mode, yaml_mode, "hybrid") if v is not None)


# **Feature: ai-memory-system, Property: Secrets Never From Files**
@given(key=st.sampled_from(["llm_api_key", "embedding_api_key"]), secret=st.text(st.characters(categories=("L", "N")), min_size=1, max_size=40))
def test_property_api_keys_in_yaml_are_refused(tmp_path_factory, key: str, secret: str):
    """
    **Validates: Requirements 1.1**
    Any non-empty API key written in the settings file is refused with ConfigError, and the error does not repeat it.
    """
    assume(secret.strip())
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    secret = f"sk-{secret}"  # distinct enough that finding it in the message means it was repeated
    path.write_text(f"{key}: {json.dumps(secret)}\n", encoding="utf-8")
    saved = os.environ.get("HIPPOCAMPUS_CONFIG")
    os.environ["HIPPOCAMPUS_CONFIG"] = str(path)
    try:
        with pytest.raises(ConfigError) as info:
            MemoryConfig()
    finally:
        os.environ.pop("HIPPOCAMPUS_CONFIG", None)
        if saved is not None:
            os.environ["HIPPOCAMPUS_CONFIG"] = saved
    assert secret not in str(info.value)
