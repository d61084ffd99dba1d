"""Requests that carry a fact or a preference keep it (issue 55, item 4): "can you stop giving me Windows
shortcuts? I'm on a Mac" is kept whole as a preference, "also can you keep answers short?" is kept, and a
clause read as a question is never cut from a statement ("…20,000 miles on United Airlines, which means I'm
finally eligible for Premier Silver status" keeps both parts). The offline write rules and the gate."""

from __future__ import annotations

import pytest

from hippocampus.lifecycle.categories import guess_category
from hippocampus.llm.rules.writing import decide
from hippocampus.models import Category, MemoryType
from hippocampus.processors.gate import gate


def said(text: str) -> dict:
    return decide([{"role": "user", "content": text}])


@pytest.mark.parametrize("text", [
    "can you stop giving me Windows shortcuts? I'm on a Mac",
    "also can you keep answers short?",
    "以后回答简短一点，我看不了长文",
    "别再给我推荐辣的菜了，我胃不好",
])
def test_a_request_that_states_a_preference_is_kept_whole_as_one(text):
    decision = said(text)
    assert decision["write_episodic"] and decision["thing"] == text, decision
    assert guess_category(decision["thing"], MemoryType.EPISODIC) is Category.PREFERENCE
    assert gate([{"role": "user", "content": text}]) is None  # never skipped before a model either


def test_a_relative_clause_is_no_question_cut_from_its_statement():
    text = "I actually just hit 20,000 miles on United Airlines, which means I'm finally eligible for Premier Silver status"
    assert said(text)["thing"] == text


@pytest.mark.parametrize("text", ["shorter, please", "What is the capital of France?", "Which is better, tea or coffee?",
                                  "我以后想当医生"])
def test_one_off_remarks_questions_and_plans_are_no_preference(text):
    assert not said(text)["write_episodic"] or guess_category(text, MemoryType.EPISODIC) is not Category.PREFERENCE


@pytest.mark.parametrize("text", ["When I was a kid, I lived in Ohio.", "How I met my wife is a funny story, we met at a train station.",
                                  "What I really want is a quiet job near the sea."])
def test_a_wh_clause_without_inversion_is_part_of_the_statement(text):
    assert said(text)["thing"] == text
