"""The answer first (issue 55): a question, request or remark kept as a memory never outranks the
statement that answers a question; a question about a common slot (job, pet, boss, rent) prefers the
statement of that slot, in either language; and fusion keeps a memory both lists put in their top 3
within its top 5. One user's store, as a chat hook fills it: her facts in English and Chinese, her
questions to the assistant, requests, remarks and chatter. Real milvus-lite and the bundled embedders."""

from __future__ import annotations

import uuid

import pytest

from hippocampus import Memory
from hippocampus.retrieval.fusion import Candidate, fuse
from hippocampus.retrieval.slot_cues import asked, stated
from hippocampus.retrieval.speech import act_of

JOB_EN, JOB_ZH = "I work at Siemens as a project engineer", "我是一名数学老师，在杭州二中教书"
JOBS = (JOB_EN, JOB_ZH)  # her job, once in each language: either answers a job question in either
DOG, CAT = "We have a golden retriever called Max", "Our ragdoll Mochi sleeps on the sofa all day"
BOSS, RENT = "My new boss is called Martina, she's Italian", "Our rent is 1450 euros a month, heating extra"
MEMORIES = [
    JOB_EN, JOB_ZH, DOG, CAT, BOSS, RENT,
    "I'm learning Spanish on Duolingo every morning before work",
    "我妈上周做了白内障手术，恢复得不错",
    "My neighbour's cat is called Luna",
    "鸭血粉丝汤哪家好", "杭州哪里的小笼包好吃？", "推荐几本适合高中生的数学书",
    "Can you suggest a name for a new kitten?", "What jobs are good for people who like nights?",
    "How much should I pay for rent in Berlin?", "Write a short poem about my dog",
    "ugh, work was so long today", "你刚才说错了", "thanks, that's perfect",
    "我在学德语，每周二晚上上课", "I go to the gym on Monday and Thursday evenings",
]


@pytest.fixture(scope="module")
def top(shared_db, embedder):
    """question -> the texts of its top 3, from one store."""
    with Memory(milvus_uri=str(shared_db), collection_name=f"answer_{uuid.uuid4().hex[:10]}", embedder=embedder) as memory:
        memory.add_many([{"text": t, "user_id": "mei"} for t in MEMORIES])
        yield lambda q: [h.memory.text for h in memory.search(q, user_id="mei", limit=3).all]


@pytest.mark.parametrize("question, answer", [
    ("Where do I work?", JOBS),  # was: the Duolingo lessons "before work"
    ("我是做什么工作的？", JOBS),  # was: the mother's cataract surgery
    ("What is my dog's name?", DOG),
    ("What's our cat's name?", CAT),  # "ragdoll", never "cat"
    ("我的新老板叫什么？", BOSS),  # a Chinese question, an English fact around a name
    ("我们房租多少？", RENT),  # ... and around a number
])
def test_the_statement_that_answers_comes_first(top, question, answer):
    assert top(question)[0] in (answer if isinstance(answer, tuple) else (answer,))


@pytest.mark.parametrize("question", ["我住在哪里？", "我对什么过敏？", "What's my job?", "我家猫叫什么？"])
def test_a_question_to_the_assistant_stays_out_of_unrelated_top_3(top, question):
    assert "鸭血粉丝汤哪家好" not in top(question)


def test_a_question_kept_as_a_memory_is_still_found_when_it_is_the_only_match(top):
    assert top("鸭血粉丝汤")[0] == "鸭血粉丝汤哪家好"


@pytest.mark.parametrize("text, act", [
    ("鸭血粉丝汤哪家好", "question"), ("What jobs are good for people who like nights?", "question"),
    ("Can you suggest a name for a new kitten?", "request"), ("帮我写一首关于秋天的诗", "request"),
    ("你刚才说错了", "remark"), ("thanks, that's perfect", "remark"), ("今天天气真不错", "remark"),
    ("Isla keeps getting nosebleeds, is that something I should see the GP for?", "statement"),
    ("请记住我对芒果过敏", "statement"), (JOB_ZH, "statement"), ("Caroline: I went to a support group", "statement"),
    ("写了周报 on day 2", "statement"), ("昨天写过一篇博客", "statement"),  # a verb done (了/过) is no request
])
def test_what_a_text_does(text, act):
    assert act_of(text) == act


def test_slot_cues_read_a_question_and_a_statement_in_either_language():
    assert asked("Where do I work?") == {"work"} and asked("我是做什么工作的？") == {"work"}
    assert asked("What's our cat's name?") == {"cat"} and asked("我们房租多少？") == {"rent"}
    assert "work" in stated(JOB_EN) and "work" in stated(JOB_ZH) and "work" not in stated(MEMORIES[6])
    assert "cat" in stated(CAT) and "cat" not in stated(DOG) and "boss" in stated(BOSS) and "rent" in stated(RENT)


def _cand(i: int, text: str, sim: float, dense: int, bm25: int | None = None, hub: float = 0.0) -> Candidate:
    return Candidate(row={"id": i, "text": text}, similarity=sim, dense_rank=dense, bm25_rank=bm25,
                     bm25=None if bm25 is None else 10.0 - bm25, hub=hub)


def test_fusion_keeps_a_memory_both_lists_put_in_their_top_3_within_the_top_5():
    """The cross-language stage gives memories in another script a dense score of its own (`hub`), so six
    Chinese memories can pass the English one that dense search and BM25 both ranked near the top."""
    dog = _cand(0, DOG, 0.90, dense=0, bm25=2)
    others = [_cand(i, f"我们家的事情{i}", 0.80, dense=i, hub=0.35 - 0.01 * i) for i in range(1, 7)]
    lexical = [_cand(7, "dog food prices", 0.70, dense=7, bm25=0), _cand(8, "my dog's vet", 0.70, dense=8, bm25=1)]
    ranked = fuse([dog, *others, *lexical], "What is my dog's name?")
    assert [c.id for c in ranked].index(0) == 4 and ranked[4].parts["agreed"] > 0
    assert [c.id for c in ranked][:4] == [1, 2, 3, 4] and {c.id for c in ranked[5:]} >= {5, 6, 7, 8}
    assert all(a.score >= b.score for a, b in zip(ranked[:5], ranked[1:5]))
    alone = fuse([_cand(0, DOG, 0.90, dense=0, bm25=5), *[_cand(i, f"我们家的事情{i}", 0.80, dense=i, hub=0.35) for i in range(1, 7)]],
                 "What is my dog's name?")
    assert [c.id for c in alone].index(0) == 6  # outside BM25's top 3: no guarantee


def test_the_labelled_set_is_what_it_says():
    """tests/data/ranking_questions.json (scripts/eval_ranking.py): each answer is one of its user's memories."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).resolve().parents[1] / "data" / "ranking_questions.json").read_text(encoding="utf-8"))
    questions = [(p, q) for p in data["personas"] for q in p["questions"]]
    assert len(questions) >= 80 and {p["split"] for p in data["personas"]} == {"tune", "held_out"}
    assert {q["lang"] for _, q in questions} == {"en", "zh", "en->zh", "zh->en"}
    assert all(q["a"] and set(q["a"]) <= set(p["memories"]) for p, q in questions)
