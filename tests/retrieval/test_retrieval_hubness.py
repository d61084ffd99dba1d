"""The hubness stage (retrieval/hubness.py): memories that sit close to every query (with the bundled
e5-small, Chinese ones) no longer outrank the memory a question is about. The README's own example,
then a small bilingual fixture of everyday questions (where, when, who, likes, allergies; English and
Chinese, same- and cross-language) over one user's memories, each the others' distractors."""

from __future__ import annotations

import uuid
from dataclasses import replace

import numpy as np
import pytest

from hippocampus import Memory
from hippocampus.retrieval.hubness import corrections, hub_scores

MEMORIES = ["I moved to Berlin in May", "My favourite food is ramen", "我下个月要去东京出差", "My sister Ana lives in Lyon",
            "我对花生过敏", "I adopted a cat named Miso", "我在北京的一家银行工作", "My birthday is on 3 March",
            "我最喜欢的歌手是周杰伦", "I play tennis every Saturday", "我女儿今年五岁了", "I'm learning Spanish on Duolingo"]
QUESTIONS = [("Where do I live now?", 0), ("what's my favourite dish?", 1), ("When is my business trip to Tokyo?", 2),
             ("我下个月去哪里出差？", 2), ("Where does my sister live?", 3), ("我姐姐住在哪？", 3), ("What am I allergic to?", 4),
             ("我对什么过敏？", 4), ("What is my cat's name?", 5), ("我的猫叫什么？", 5), ("Where do I work?", 6),
             ("我在哪里工作？", 6), ("When is my birthday?", 7), ("我的生日是几号？", 7), ("Who is my favourite singer?", 8),
             ("我喜欢哪个歌手？", 8), ("What sport do I play?", 9), ("我周末做什么运动？", 9), ("How old is my daughter?", 10),
             ("我女儿几岁？", 10), ("What language am I learning?", 11), ("我在学什么语言？", 11)]


def _zh(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_hub_scores_and_corrections_are_what_they_say():
    probes = np.eye(4, dtype=np.float32)
    vectors = np.asarray([[1, 0, 0, 0], [0.6, 0.8, 0, 0]], dtype=np.float32)
    assert hub_scores(vectors, probes, top=2).tolist() == pytest.approx([0.5, 0.7])
    gains = corrections([0.5, 0.7], weight=0.5)
    assert gains == pytest.approx([0.05, -0.05]) and sum(gains) == pytest.approx(0.0)
    assert corrections([0.5, 0.7], weight=0) == [0.0, 0.0] and hub_scores(np.zeros((0, 4)), probes).size == 0


@pytest.fixture
def bilingual(shared_db, embedder, request):
    """e5 alone (the hubness stage corrects e5's own bias), or with the cross-language vectors (the default)."""
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"hub_{uuid.uuid4().hex[:10]}", embedder=embedder,
                    crosslang_embedder=getattr(request, "param", None))
    memory.add_many([{"text": t, "user_id": "alice"} for t in MEMORIES])
    yield memory
    memory.close()


def _top3(memory: Memory) -> tuple[int, int]:
    """(questions whose memory is in the top 3, of those the cross-language ones)."""
    found = cross = 0
    for question, answer in QUESTIONS:
        texts = [h.text for h in memory.search(question, user_id="alice", limit=3, memory_type="episodic").all]
        hit = MEMORIES[answer] in texts
        found += hit
        cross += hit and _zh(question) != _zh(MEMORIES[answer])
    return found, cross


def test_the_readme_example_ranks_berlin_first_because_of_the_hubness_stage(shared_db, embedder):
    with Memory(milvus_uri=str(shared_db), collection_name=f"hub_{uuid.uuid4().hex[:10]}", embedder=embedder,
                crosslang_embedder=None) as memory:  # e5 alone: with the cross-language vectors the Chinese memory is placed by them
        for text in ["I moved to Berlin in May", "My favourite food is ramen", "我下个月要去东京出差"]:
            memory.add(text, user_id="alice")
        hit = memory.search("where does alice live?", user_id="alice").all[0]
        assert hit.text == "I moved to Berlin in May" and "hubness" in hit.signals
        params = memory.retriever.params
        memory.retriever.params = replace(params, hubness_weight=0.0, subject_weight=0.0)
        assert memory.search("where does alice live?", user_id="alice").all[0].text == "我下个月要去东京出差"  # the cause
        memory.retriever.params = replace(params, hubness_weight=0.0)  # the home rule of the subject stage alone also suffices
        hit = memory.search("where does alice live?", user_id="alice").all[0]
        assert hit.text == "I moved to Berlin in May" and "home" not in hit.signals


def test_everyday_bilingual_questions_find_their_memory_with_the_stage_and_fewer_without(bilingual):
    with_stage = _top3(bilingual)
    bilingual.retriever.params = replace(bilingual.retriever.params, hubness_weight=0.0)
    without = _top3(bilingual)
    assert with_stage[0] >= 20 and with_stage[1] >= 7, with_stage  # of 22 questions, 10 of them cross-language
    assert with_stage[0] > without[0] and with_stage[1] >= without[1], (with_stage, without)


@pytest.mark.parametrize("bilingual", ["auto"], indirect=True)
def test_the_cross_language_vectors_find_every_cross_language_question(bilingual):
    found, cross = _top3(bilingual)  # the default: e5 plus the cross-language vectors (retrieval/crosslang.py)
    assert cross == 10 and found >= 21, (found, cross)
