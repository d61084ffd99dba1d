"""Owners stay owners and facts come only from what is current (issue 55, items 1-2): a relative's, a
friend's or a pet's fact is never restated as the user's, on the add path (a clause cut keeps its subject)
or in a distilled fact; consolidation never builds a fact from a superseded memory, a request or a fragment.
Pure rules first; one real milvus-lite store (the offline rules are the model) for the whole path."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.consolidation.distill import not_to_distil
from hippocampus.embeddings import OfflineEmbedder
from hippocampus.llm.rules.writing import extract_facts
from hippocampus.models import MemoryType
from hippocampus.processors.semantic_writer import SemanticWriter, moves_owner
from hippocampus.testing import ScriptedChatModel
from hippocampus.text import clauses

from ..processors.test_processors_online import record


def test_a_cut_clause_keeps_its_subject():
    assert clauses("我爸去年做了心脏支架，现在每天吃阿司匹林。")[1] == "我爸现在每天吃阿司匹林"
    assert clauses("我老公叫李明，是一名建筑设计师。")[1] == "我老公是一名建筑设计师"
    assert clauses("我叫李雷，在杭州工作")[1] == "我在杭州工作"  # the user's own subject is carried as before


@pytest.mark.parametrize("text, wrong", [
    ("我老公叫李明，是一名建筑设计师。", "用户是一名建筑设计师"),
    ("我爸去年做了心脏支架，现在每天吃阿司匹林。", "用户现在每天吃阿司匹林"),
    ("My husband Mark is an architect.", "The user is an architect"),
    ("Write a short goodbye email to my team.", "The user says that"),
    ("I started late", "The user started late"),
])
def test_the_offline_distiller_keeps_the_owner(text, wrong):
    facts = extract_facts({"text": text}, [])
    assert not any(f.startswith(wrong) for f in facts), facts


def test_a_relatives_fact_is_distilled_as_theirs():
    assert "用户的老公是一名建筑设计师" in extract_facts({"text": "我老公叫李明，是一名建筑设计师。"}, [])
    assert extract_facts({"text": "我是一名数学老师。"}, []) == ["用户是一名数学老师"]


def test_a_models_fact_that_moves_the_owner_is_dropped():
    assert moves_owner("用户每天要吃氨氯地平", "我妈高血压，医生给她开了氨氯地平，每天要吃一片。")
    assert moves_owner("The user takes aspirin daily", "My dad had a stent and takes aspirin daily.")
    assert not moves_owner("The user has a daughter, Emma", "I'm allergic to peanuts and my daughter is Emma")
    reply = '{"facts": [{"fact": "用户是一名建筑设计师"}, {"fact": "用户的老公叫李明"}]}'
    out = SemanticWriter(ScriptedChatModel([reply])).extract(record("我老公叫李明，是一名建筑设计师。"), [])
    assert [f.fact for f in out.facts] == ["用户的老公叫李明"]


def test_superseded_pending_and_distilled_episodes_are_not_distilled():
    assert not_to_distil({"metadata": {"life": {"superseded_by": 7, "category": "fact", "last_activated": 1}}})
    assert not_to_distil({"metadata": {"life": {"valid_to": 9, "category": "fact", "last_activated": 1}}})
    assert not_to_distil({"metadata": {"pending_decision": True}})
    assert not not_to_distil({"metadata": {"life": {"category": "fact", "last_activated": 1}}})


def test_consolidation_builds_only_from_current_memories_of_their_owners(shared_db: Path, embedder: OfflineEmbedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"o_{uuid.uuid4().hex[:8]}", embedder=embedder)
    try:
        for text in ["我是一名数学老师。", "我老公叫李明，是一名建筑设计师。", "I live in Portland with my dog Biscuit.",
                     "I don't live in Portland anymore, I moved to Seattle.", "Write a short goodbye email to my team."]:
            m.add(text, user_id="u", infer=True)
        m.consolidate(user_id="u")
        facts = [r.text for r in m.get_all("u", memory_type=MemoryType.SEMANTIC)]
        assert "用户是一名数学老师" in facts and "用户是一名建筑设计师" not in facts, facts
        assert not any("Portland with" in f or "says that" in f for f in facts), facts
    finally:
        m.close()
