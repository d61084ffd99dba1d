"""Seed 002's merge properties (10, 11, 12, 18-22) against real milvus-lite.

One Memory per test function on its own store, with an 8-d hash embedder so that each
example can insert two episodes with a chosen cosine similarity; a unique user per
example. The Merger and Separator are scripted through the ChatModel interface.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.store import filters as F
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import episode_row, merge_union, scripted_chat, vector_pair

LOW, HIGH = 0.65, 0.85
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
SAME_CHAT_S, DIFF_CHAT_S = 1800, 604800
DAY_S = 86400  # events on different days never merge (issue 40: consolidation/rules.different_days)

merge_sims = st.floats(min_value=HIGH + 0.002, max_value=0.999)
ambiguous_sims = st.floats(min_value=LOW + 0.002, max_value=HIGH - 0.002)
names = st.text(alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Lo", "Nd")), min_size=1, max_size=12)


@pytest.fixture
def mem(shared_db):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"props_{uuid.uuid4().hex[:12]}", embedder=DeterministicEmbedder(8, lexical=False), llm=scripted_chat({"MergeResult": merge_union}),
               t_merge_high=HIGH, t_amb_low=LOW)
    yield m
    m.close()


def _pair(mem: Memory, sim: float, gap: int, same_chat: bool, who_a: str = "me", who_b: str = "me", seed: int = 0, base: int = T0):
    user = f"u-{uuid.uuid4().hex}"
    va, vb = vector_pair(sim, seed=seed)
    chat_b = "c1" if same_chat else "c2"
    ids = mem.store.insert([
        episode_row(user, "first telling", va, base, "c1", who_a),
        episode_row(user, "second telling", vb, base + gap, chat_b, who_b),
    ])
    return user, ids


def _count(mem: Memory, user: str) -> int:
    return mem.store.count(F.and_(F.eq("user_id", user), F.eq("memory_type", "episodic")))


# **Feature: ai-memory-system, Property 10: Merge Threshold Enforcement**
@given(sim=merge_sims, same_chat=st.booleans(), frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_merge_threshold_enforcement(mem, sim, same_chat, frac, seed):
    """
    **Validates: Requirements 5.2**
    For any pair with similarity >= T_merge_high, the same who and passing time/chat
    constraints (and a Merger that judges them one event), consolidation merges them.
    """
    gap = int(frac * (SAME_CHAT_S if same_chat else DAY_S - 1))  # across chats: within 7 days and on one day
    user, ids = _pair(mem, sim, gap, same_chat, seed=seed)
    stats = mem.consolidate(user_id=user)
    records = mem.get_all(user, "episodic")
    assert stats.merged == 1 and len(records) == 1
    assert sorted(records[0].metadata["merged_from_ids"]) == sorted(ids)
    assert records[0].who == "me" and "merge_pending" not in records[0].metadata


# **Feature: ai-memory-system, Property 11: Separation Threshold Enforcement**
@given(sim=ambiguous_sims, same_chat=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_separation_threshold_enforcement(mem, sim, same_chat, seed):
    """
    **Validates: Requirements 5.3**
    For any pair with T_amb_low <= similarity < T_merge_high, consolidation calls the
    EpisodicSeparator and rewrites both records in place (same ids, re-embedded).
    """
    llm = mem.llm
    before = llm.count("SeparationResult"), llm.count("MergeResult")
    user, ids = _pair(mem, sim, 60, same_chat, seed=seed)
    old_vectors = mem.store.vectors(ids)
    stats = mem.consolidate(user_id=user)
    assert llm.count("SeparationResult") == before[0] + 1 and llm.count("MergeResult") == before[1]
    assert stats.separated_pairs == 1 and stats.separated == 2 and stats.merged == 0  # one pair, both memories
    records = {r.id: r for r in mem.get_all(user, "episodic")}
    assert set(records) == set(ids)
    assert records[ids[0]].text == "first telling (A)" and records[ids[1]].text == "second telling (B)"
    new_vectors = mem.store.vectors(ids)
    assert all(new_vectors[i] != old_vectors[i] for i in ids)  # re-embedded


# **Feature: ai-memory-system, Property 12: Merge Record Count Invariant**
@given(sim=merge_sims, extra=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_merge_record_count_invariant(mem, sim, extra, seed):
    """
    **Validates: Requirements 5.4**
    For any merge of two memories, the total record count decreases by exactly 1.
    """
    user, ids = _pair(mem, sim, 120, True, seed=seed)
    # bystanders with arbitrary (hash) vectors: whatever else merges, each merge removes exactly one record
    texts = [f"bystander {seed} {i}" for i in range(extra)]
    mem.store.insert([episode_row(user, t, v.tolist(), T0 + 30 * i, "c1") for i, (t, v) in enumerate(zip(texts, DeterministicEmbedder(8, lexical=False).encode(texts)))])
    before = mem.store.count(F.eq("user_id", user))
    stats = mem.consolidate(user_id=user)
    after = mem.store.count(F.eq("user_id", user))
    assert stats.merged >= 1
    assert after == before - stats.merged
    assert not {r.id for r in mem.get_all(user)} & set(ids)  # both originals were replaced


# **Feature: ai-memory-system, Property 18: Same Chat Merge Time Constraint**
@given(sim=merge_sims, gap=st.integers(0, 4 * SAME_CHAT_S), seed=st.integers(0, 2**32 - 1))
def test_same_chat_merge_time_constraint(mem, sim, gap, seed):
    """
    **Validates: Requirements 9.1**
    Two memories of the same chat merge only if |ts1 - ts2| <= 1800 seconds.
    """
    user, _ = _pair(mem, sim, gap, True, seed=seed)
    mem.consolidate(user_id=user)
    assert (_count(mem, user) == 1) == (gap <= SAME_CHAT_S)


# **Feature: ai-memory-system, Property 19: Different Chat Merge Time Constraint**
@given(sim=merge_sims, gap=st.integers(0, 3 * DIFF_CHAT_S), seed=st.integers(0, 2**32 - 1))
def test_different_chat_merge_time_constraint(mem, sim, gap, seed):
    """
    **Validates: Requirements 9.2**
    Two memories of different chats merge only if |ts1 - ts2| <= 604800 seconds (7 days), and (issue 40)
    only when their events fall on one day: neither text here names the other's day.
    """
    user, _ = _pair(mem, sim, gap, False, seed=seed)
    mem.consolidate(user_id=user)
    assert (_count(mem, user) == 1) == (gap <= DIFF_CHAT_S and gap < DAY_S)


# **Feature: ai-memory-system, Property 20: Who Field Merge Constraint**
@given(sim=merge_sims, who_a=names, who_b=names, seed=st.integers(0, 2**32 - 1))
def test_who_field_merge_constraint(mem, sim, who_a, who_b, seed):
    """
    **Validates: Requirements 9.3**
    Memories whose who fields differ are never merged.
    """
    user, _ = _pair(mem, sim, 60, True, who_a, who_b, seed=seed)
    mem.consolidate(user_id=user)
    records = mem.get_all(user, "episodic")
    assert (len(records) == 1) == (who_a == who_b)
    assert sorted(r.who for r in records) == (sorted({who_a, who_b}) if who_a != who_b else [who_a])


# **Feature: ai-memory-system, Property 21: Merged Record Time Selection**
@given(sim=merge_sims, gap=st.integers(-DAY_S // 2 + 1, DAY_S // 2 - 1), seed=st.integers(0, 2**32 - 1))
def test_merged_record_time_selection(mem, sim, gap, seed):
    """
    **Validates: Requirements 9.4**
    The merged record's metadata.time is the earlier of the two original metadata.time values.
    """
    user, ids = _pair(mem, sim, gap, False, seed=seed, base=T0 + DAY_S // 2)  # noon: both on one day
    originals = {r.id: r for r in mem.get_all(user)}
    earlier = min(originals.values(), key=lambda r: r.ts)
    mem.consolidate(user_id=user)
    (merged,) = mem.get_all(user, "episodic")
    assert merged.metadata["time"] == earlier.metadata["time"]
    assert merged.ts == earlier.ts and merged.chat_id == earlier.chat_id


# **Feature: ai-memory-system, Property 22: Merged Record Source Tracking**
@given(sim=merge_sims, chat_a=names, chat_b=names, seed=st.integers(0, 2**32 - 1))
def test_merged_record_source_tracking(mem, sim, chat_a, chat_b, seed):
    """
    **Validates: Requirements 9.5**
    The merged record's metadata.source_chat_ids contains both original chat_ids
    (and merged_from_ids both original ids).
    """
    user = f"u-{uuid.uuid4().hex}"
    va, vb = vector_pair(sim, seed=seed)
    gap = 60 if chat_a == chat_b else 3600
    ids = mem.store.insert([episode_row(user, "x", va, T0, chat_a), episode_row(user, "y", vb, T0 + gap, chat_b)])
    mem.consolidate(user_id=user)
    (merged,) = mem.get_all(user, "episodic")
    assert {chat_a, chat_b} <= set(merged.metadata["source_chat_ids"])
    assert sorted(merged.metadata["merged_from_ids"]) == sorted(ids)
