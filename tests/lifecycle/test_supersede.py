"""Contradictions, newest wins (issue 14, item 6): the judge's offline rules, the processor's refusal
of ids it was not shown, and consolidation marking the older fact superseded on real milvus-lite."""

from __future__ import annotations

import json

import pytest

from hippocampus import Memory
from hippocampus.llm.rules import RulesProvider
from hippocampus.llm.rules.lifecycle import slots
from hippocampus.models import HistoryAction, MemoryRecord, MemoryType
from hippocampus.processors.contradiction import ContradictionJudge
from hippocampus.testing import ScriptedChatModel


def _fact(i: int, text: str, ts: int) -> MemoryRecord:
    return MemoryRecord(id=i, user_id="u", memory_type=MemoryType.SEMANTIC, ts=ts, chat_id="c", who="u", text=text)


@pytest.mark.parametrize("new, old, replaced", [
    ("The user lives in Porto", "The user lives in Lisbon", True),
    ("I moved to Porto last week", "I live in Lisbon, near the river", True),
    ("用户搬到了上海", "用户住在杭州", True),
    ("The user is 35 years old", "The user is 34 years old", True),
    ("用户在腾讯工作", "用户在阿里巴巴工作", True),
    ("The user lives in Lisbon", "The user lives in Lisbon", False),  # the same value: a repetition
    ("The user's sister lives in Lyon", "The user lives in Lisbon", False),  # someone else
    ("用户现在很放松", "用户十天前很紧张", False),  # a change over time, both stay
    ("The user also plays the cello", "The user plays the piano", False),
])
def test_the_offline_judge_speaks_only_of_single_valued_slots_of_the_user(new, old, replaced):
    judge = ContradictionJudge(RulesProvider())
    ids, _ = judge.judge(_fact(2, new, 200), [_fact(1, old, 100)])
    assert (ids == [1]) is replaced, (new, old, slots(new), slots(old))


def test_a_model_naming_a_fact_it_was_not_shown_touches_nothing():
    llm = ScriptedChatModel(default=json.dumps({"superseded": [1, 7, -3], "reason": "x"}))
    ids, _ = ContradictionJudge(llm).judge(_fact(9, "The user lives in Porto", 200), [_fact(4, "The user lives in Lisbon", 100)])
    assert ids == [4]


def test_consolidation_supersedes_the_old_home_and_search_context_and_history_agree(memory: Memory):
    old = memory.add("The user lives in Lisbon", user_id="u", memory_type="semantic", ts=1_700_000_000).ids[0]
    other = memory.add("The user loves jazz", user_id="u", memory_type="semantic", ts=1_700_000_100).ids[0]
    new = memory.add("The user lives in Porto", user_id="u", memory_type="semantic", ts=1_760_000_000).ids[0]
    memory.add("The user lives in Lisbon", user_id="bob", memory_type="semantic", ts=1_700_000_000)
    stats = memory.consolidate("u")
    assert stats.superseded == 1
    life = memory.get(old, "u").life
    assert (life.superseded_by, life.valid_to) == (new, 1_760_000_000) and life.importance == pytest.approx(0.3)
    assert memory.get(other, "u").life.superseded_by is None
    found = [h.id for h in memory.search("where does the user live?", user_id="u").semantic]
    assert new in found and old not in found
    assert old in [h.id for h in memory.search("where does the user live?", user_id="u", include_superseded=True).semantic]
    assert "Lisbon" not in memory.context("u") and "Porto" in memory.context("u")
    for mode in ("bm25", "hybrid"):  # a query sharing no word: BM25's list is filled (milvus-lite: without the JSON filter)
        filled = [h.id for h in memory.search("qqzx", user_id="u", mode=mode, limit=5).semantic]
        assert new in filled and other in filled and old not in filled, (mode, filled)
    (event,) = [e for e in memory.history(old, "u") if e.action is HistoryAction.SUPERSEDED]
    assert event.details["superseded_by"] == new and event.old_text == "The user lives in Lisbon"
    assert memory.consolidate("u").superseded == 0  # judged once
    assert [h.text for h in memory.search("where does bob live?", user_id="bob").semantic] == ["The user lives in Lisbon"]
