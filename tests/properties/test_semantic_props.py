"""Seed 002's Property 13 (semantic memory field completeness) against real milvus-lite."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.testing import DeterministicEmbedder
from hippocampus.text import normalise_fact as normalise
from tests.consolidation_helpers import episode_row, scripted_chat

T0 = 1_767_225_600
facts_strategy = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(lambda s: s.strip()),
    min_size=0,
    max_size=4,
)


@pytest.fixture
def mem(shared_db):
    scripted = scripted_chat()
    m = Memory(milvus_uri=str(shared_db), collection_name=f"sem_{uuid.uuid4().hex[:12]}", embedder=DeterministicEmbedder(8, lexical=False), llm=scripted, t_merge_high=0.999, t_amb_low=0.998)
    yield m
    m.close()


# **Feature: ai-memory-system, Property 13: Semantic Memory Field Completeness**
@given(facts=facts_strategy, chat=st.text(alphabet="abcxyz019-_中文", min_size=1, max_size=10), offset=st.integers(0, 10**8))
@example(facts=["I", "I like tea", "i like tea."], chat="0", offset=0)  # a bare subject is no fact; case/punctuation repeats stored once
def test_semantic_memory_field_completeness(mem, facts, chat, offset):
    """
    **Validates: Requirements 6.6**
    Every semantic memory created by consolidation has memory_type="semantic" and metadata
    with fact, source_chatid and first_seen; facts are stored once (deduplicated), "the same
    fact" meaning the SemanticWriter's normalisation (case, punctuation and a leading subject
    such as "I"/"我" ignored), so a bare subject ("I") carries no fact and is not stored.
    """
    user = f"u-{uuid.uuid4().hex}"
    mem.llm.replies["SemanticExtraction"] = lambda _inputs: json.dumps({"facts": [{"fact": f} for f in facts]})
    vector = DeterministicEmbedder(8, lexical=False).encode([f"episode {user}"])[0].tolist()
    # the episode holds the facts: the guard drops a fact whose numbers or names its sources never said
    (episode_id,) = mem.store.insert([episode_row(user, " | ".join(facts) or "an episode", vector, T0 + offset, chat)])
    episode = mem.get(episode_id, user)

    stats = mem.consolidate(user_id=user)
    semantic = mem.get_all(user, "semantic")
    expected = {normalise(f) for f in facts if normalise(f)}
    assert stats.semantic_created == len(semantic) == len(expected)
    for record in semantic:
        assert record.memory_type.value == "semantic"
        assert {"fact", "source_chatid", "first_seen"} <= set(record.metadata)
        assert record.metadata["fact"] == record.text and normalise(record.text) in expected
        assert record.metadata["source_chatid"] == chat
        assert record.metadata["first_seen"] == episode.metadata["time"]
    assert mem.get(episode_id, user).metadata["distilled"] is True

    again = mem.consolidate(user_id=user)  # distilled episodes are skipped: nothing new
    assert again.semantic_created == 0 and len(mem.get_all(user, "semantic")) == len(semantic)
