"""Eighty everyday questions about one user and the people around her (tests/data/everyday_questions.json,
issue 40): 72 memories in English and Chinese with distractors (her home, a trip, a former home, her
parents' home; our dog, the neighbour's cat, her sister's cat; her shoe size and her husband's), 15 of
the questions cross-language. Real milvus-lite, the bundled embedders, the default ranking. Measured when
the subject stage learnt "we"/"our" and home questions: 71 of 80 first, 75 in the top 3 (68 and 72 before);
when the answer stage's slot bonus learnt whose slot a question asks (issue 55: "王琳的狗叫什么？", "我姐家的猫叫
什么名字？", "我姐是做什么工作的？"): 74 first, 77 in the top 3. The floors sit a little under that."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "everyday_questions.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ranked(shared_db, embedder) -> list[tuple[dict, list[str]]]:
    with Memory(milvus_uri=str(shared_db), collection_name=f"every_{uuid.uuid4().hex[:10]}", embedder=embedder) as memory:
        memory.add_many([{"text": t, "user_id": "mei"} for t in DATA["memories"]])
        return [(q, [h.memory.text for h in memory.search(q["q"], user_id="mei", limit=3).all]) for q in DATA["questions"]]


def test_the_fixture_is_what_it_says():
    questions = DATA["questions"]
    assert len(questions) >= 60 and {q["lang"] for q in questions} == {"en", "zh"} and {q["about"] for q in questions} == {"user", "other"}
    assert all(q["answers"] and all(0 <= i < len(DATA["memories"]) for i in q["answers"]) for q in questions)


def test_everyday_questions_find_their_memory(ranked):
    answer = lambda q: {DATA["memories"][i] for i in q["answers"]}  # noqa: E731
    first = [q["q"] for q, texts in ranked if texts[0] not in answer(q)]
    top3 = [q["q"] for q, texts in ranked if not set(texts) & answer(q)]
    assert len(ranked) - len(first) >= 72, first
    assert len(ranked) - len(top3) >= 75, top3
    about_user = [q for q, texts in ranked if q["about"] == "user"]
    assert sum(texts[0] in answer(q) for q, texts in ranked if q["about"] == "user") >= len(about_user) - 4
