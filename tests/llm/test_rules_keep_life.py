"""The offline write rules keep a person's life (issue 40, case 1): plain first-person statements about the
body, health, diet, belongings, home, family, bookings and advice were dropped with "rules: no personal
information found" (14 of a tester's 40 facts); the analogues below, in both languages, are kept, and
what is not about the user's life still is not."""

from __future__ import annotations

import pytest

from hippocampus.llm.rules.writing import decide

KEPT = [
    "My shoe size is 43.", "I can't eat gluten, so no bread.", "I ride a 2018 Vespa.", "我们家在成都高新区。",
    "医生说我血压有点高。", "Our flat is on the fifth floor, no lift.", "The dentist said I should floss more.",
    "Booked the Lisbon flight for 14 June, seat 22A.", "家里的空调又坏了", "我血型是O型", "My knee still hurts after the run.",
    "Grandma turns 90 next week", "孩子这周发烧了", "Got the keys to the new place today!",
]
DROPPED = [
    "hi!", "thanks, that helps", "lol", "What's the capital of Peru?", "Write a haiku about autumn",
    "把这段翻译成英文：今天很冷", "you already said that", "let's change the topic", "嗯", "今天天气真不错",
    "That's not what I asked", "Plan dinner for tonight",
]


@pytest.mark.parametrize("text", KEPT)
def test_a_statement_about_the_users_life_is_kept(text):
    decision = decide([{"role": "user", "content": text}])
    assert decision["write_episodic"], decision["reason"]


@pytest.mark.parametrize("text", DROPPED)
def test_chatter_questions_requests_and_remarks_are_not(text):
    assert not decide([{"role": "user", "content": text}])["write_episodic"]


def test_the_chat_hook_stores_them(memory):
    for text in KEPT[:4]:
        assert memory.add(text, user_id="tester", infer=True).stored
    assert memory.search("What shoe size do I wear?", user_id="tester").all[0].text == "My shoe size is 43."
