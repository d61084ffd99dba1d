"""What the assistant said is kept when the user may come back to it (issue 55, text/assistant.py,
memory/assistant_turns.py): through add(infer=True) with the exchange's roles, a recommendation, a list, a plan
or an answer becomes the assistant's memory of that turn, findable by "what did you recommend", "the restaurant
in Rome you recommended", "你推荐的那家", "the 7th job idea" (a numbered list kept whole). Before, the reply lived
only in metadata that search does not read, and a turn of a question alone stored nothing. Chit-chat is not kept.
And a relative clause ("which means I'm finally eligible ...") is no question: it is no longer cut."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.text import clauses, is_question
from hippocampus.text.assistant import kept, ordinal

JOBS = "Here are 10 job ideas for you:\n" + "\n".join(f"{i}. {idea}" for i, idea in enumerate(
    ["Data analyst", "UX researcher", "Technical writer", "Product manager", "Solutions engineer", "Park ranger",
     "Beekeeper at an urban apiary", "Sommelier", "Museum curator", "Yoga teacher"], 1))


@pytest.fixture(scope="module")
def store(shared_db: Path, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"asst_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


def _exchange(memory: Memory, user: str, asked: str, reply: str):
    return memory.add([{"role": "user", "content": asked}, {"role": "assistant", "content": reply}], user_id=user, infer=True)


def test_recommendations_are_found_in_both_languages(store: Memory) -> None:
    user = f"r{uuid.uuid4().hex[:8]}"
    rome = _exchange(store, user, "Can you recommend a restaurant in Rome?",
                     "I recommend Da Enzo al 29 in Trastevere: classic Roman carbonara and cacio e pepe.")
    hz = _exchange(store, user, "给我推荐一家杭州的餐厅", "推荐你去外婆家，西湖边那家，东坡肉和龙井虾仁都很好吃。")
    _exchange(store, user, "I have a dentist appointment on Friday.", "Good luck!")
    assert rome.stored and hz.stored
    record = store.get(rome.ids[-1], user)
    assert record.who == "assistant" and record.metadata["said_by"] == "assistant"
    assert record.metadata["assistant_kind"] == "recommendation" and record.text.startswith("Assistant recommended: ")
    assert "Da Enzo" in store.search("the restaurant in Rome you recommended", user_id=user).all[0].memory.text
    assert "外婆家" in store.search("你推荐的那家", user_id=user).all[0].memory.text
    assert {rome.ids[-1], hz.ids[-1]} <= {h.id for h in store.search("what did you recommend", user_id=user).all[:3]}


def test_a_numbered_list_is_kept_whole_and_found_by_its_item(store: Memory) -> None:
    user = f"l{uuid.uuid4().hex[:8]}"
    added = _exchange(store, user, "Give me some job ideas, I'm bored of accounting.", JOBS)
    hit = store.search("the 7th job idea", user_id=user).all[0].memory
    assert hit.id in added.ids and "7. Beekeeper at an urban apiary" in hit.text and "10. Yoga teacher" in hit.text
    assert hit.metadata["assistant_kind"] == "list"
    assert ordinal("第七个工作建议") == 7 and ordinal("the seventh one") == 7 and ordinal("what is my name") is None


@pytest.mark.parametrize("asked,reply", [
    ("Thanks!", "You're welcome!"), ("谢谢你", "不客气！"), ("I'm going hiking tomorrow.", "Have fun! Where are you going?"),
    ("好的", "好的，还有什么需要帮忙的吗？"),
])
def test_chit_chat_and_questions_back_are_not_kept(asked: str, reply: str) -> None:
    assert kept([{"role": "user", "content": asked}, {"role": "assistant", "content": reply}]) == []


def test_a_plan_and_an_answer_are_kept() -> None:
    plan = kept([{"role": "user", "content": "帮我安排一下周末"}, {"role": "assistant", "content": "周末计划：周六上午去西湖骑车，下午去灵隐寺，周日在家休息看书。"}])
    assert [m.kind for m in plan] == ["plan"] and plan[0].text.startswith("助手给出的计划：")
    answer = kept([{"role": "user", "content": "How long should I boil an egg?"},
                   {"role": "assistant", "content": "About nine minutes for a hard-boiled egg, then put it in cold water."}])
    assert [m.kind for m in answer] == ["answer"] and "(the user asked: How long should I boil an egg?)" in answer[0].text


@pytest.mark.parametrize("said,kept_words", [
    ("I actually just hit 20,000 miles on United Airlines, which means I'm finally eligible for Premier Silver status",
     ["20,000 miles", "Premier Silver"]),
    ("我刚攒够了两万里程，这意味着我终于可以升级银卡了", ["两万里程", "银卡"]),
])
def test_a_relative_clause_is_not_cut_from_a_statement(store: Memory, said: str, kept_words: list[str]) -> None:
    user = f"q{uuid.uuid4().hex[:8]}"
    text = store.get(store.add(said, user_id=user, infer=True).ids[0], user).text
    assert all(w in text for w in kept_words), text
    assert not any(is_question(c) for c in clauses(said))
    assert is_question("Which means what?") and is_question("where do I live")


def test_observe_keeps_the_assistants_recommendation_too(store: Memory) -> None:
    user = f"o{uuid.uuid4().hex[:8]}"
    result = store.observe([{"role": "user", "content": "Any good ramen place in Tokyo?"},
                            {"role": "assistant", "content": "I'd recommend Fuunji in Shinjuku for tsukemen; go before 11 to skip the line."}],
                           user_id=user)
    record = store.get(result.added[-1], user)
    assert record.who == "assistant" and "Fuunji" in record.text
    assert "Fuunji" in store.search("the ramen place you recommended", user_id=user).all[0].memory.text
    chat = store.observe([{"role": "user", "content": "thanks!"}, {"role": "assistant", "content": "You're welcome!"}], user_id=user)
    assert chat.added == []
