"""Matching words never merge two events on their own (issue 31, item 6), through the library on
milvus-lite: identical text told on different days in different chats goes to the same-event
judgement like any other pair and stays two; the same words said again in one chat stay one;
and a model that says "not the same event" is obeyed whatever the similarity."""

from __future__ import annotations

import uuid

import pytest

from hippocampus import Memory
from hippocampus.consolidation import rules as R
from hippocampus.models import MemoryRecord
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import merge_never, scripted_chat

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
DAY = 86_400
RUN = "I went running for 4 km this morning"
PASSPORT = "Remember that my passport number ends in 4471"


@pytest.fixture(scope="module")
def mem(shared_db):
    """One collection for the module, the offline rules as the model; each test has its own user."""
    m = Memory(milvus_uri=str(shared_db), collection_name=f"same_{uuid.uuid4().hex[:12]}", embedder=DeterministicEmbedder(64))
    yield m
    m.close()


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def _texts(mem: Memory, user: str) -> list[str]:
    return sorted(r.text for r in mem.get_all(user, "episodic"))


@pytest.mark.parametrize("infer", [True, False], ids=["infer", "as-is"])
def test_identical_activity_reports_on_different_days_stay_two(mem, infer):
    user = _user()
    first = mem.add(RUN, user, chat_id="c1", ts=T0 + 7 * 3600, infer=infer)
    second = mem.add(RUN, user, chat_id="c2", ts=T0 + 2 * DAY + 7 * 3600, infer=infer)
    assert first.stored and second.stored and first.ids != second.ids
    stats = mem.consolidate(user)
    assert stats.merged == 0
    texts = _texts(mem, user)
    assert len(texts) == 2 and all(RUN in t for t in texts)
    assert {r.chat_id for r in mem.get_all(user, "episodic")} == {"c1", "c2"}


def test_repeated_remember_phrase_in_one_chat_stays_one(mem):
    user = _user()
    first = mem.add(PASSPORT, user, chat_id="c1", ts=T0, infer=True)
    again = mem.add(PASSPORT, user, chat_id="c1", ts=T0 + 120, infer=True)
    assert first.stored and not again.stored and again.ids == first.ids
    mem.consolidate(user)
    (record,) = mem.get_all(user, "episodic")
    assert "4471" in record.text and record.hit_count == 1  # the repeat counted as a use


def test_same_day_same_chat_duplicate_is_still_merged(mem):
    user = _user()
    mem.add(RUN, user, chat_id="c1", ts=T0 + 7 * 3600)
    mem.add(RUN, user, chat_id="c1", ts=T0 + 7 * 3600 + 600)
    stats = mem.consolidate(user)
    assert stats.merged == 1
    assert _texts(mem, user) == [RUN]


def test_a_model_that_says_not_the_same_event_is_obeyed_for_identical_text(mem):
    """Identical words, one chat, one second apart (similarity 1.0): the model's "no" stands."""
    user, offline = _user(), mem.llm
    chat = scripted_chat({"MergeResult": merge_never})
    mem.llm = chat
    try:
        mem.add(RUN, user, chat_id="c1", ts=T0)
        mem.add(RUN, user, chat_id="c1", ts=T0 + 1)
        stats = mem.consolidate(user)
    finally:
        mem.llm = offline
    assert chat.count("MergeResult") >= 1  # the pair went to the judgement
    assert stats.merged == 0 and len(_texts(mem, user)) == 2


# ---------------------------------------------------------------- the pure rules
def _rec(text: str, ts: int, chat: str = "c1", who: str = "u") -> MemoryRecord:
    return MemoryRecord(id=1, user_id="u", memory_type="episodic", ts=ts, chat_id=chat, who=who, text=text,
                        metadata={"time": R.parse_time(None, ts).isoformat()})


def test_times_allow_one_event_only_on_the_day_the_words_name():
    monday, wednesday = "2026-01-05T07:00:00+00:00", "2026-01-07T07:00:00+00:00"
    assert R.times_allow_one_event(RUN, monday, RUN, wednesday)[0] is False
    assert R.times_allow_one_event("我今天跑了4公里", monday, "我今天跑了4公里", wednesday)[0] is False
    assert R.times_allow_one_event(RUN, monday, RUN, "2026-01-05T09:00:00+00:00") == (True, "")
    # words not tied to the day they were told: the judgement reads the words
    assert R.times_allow_one_event("We adopted a kitten named Miso", monday, "We adopted a kitten named Miso", wednesday)[0]


def test_said_again_needs_one_chat_one_person_and_the_same_window():
    old = _rec(PASSPORT, T0)
    iso = R.parse_time(None, T0 + 60).isoformat()
    assert R.said_again(old, PASSPORT.lower() + "!", "c1", "u", T0 + 60, iso)
    assert not R.said_again(old, PASSPORT, "c2", "u", T0 + 60, iso)
    assert not R.said_again(old, PASSPORT, "c1", "friend", T0 + 60, iso)
    assert not R.said_again(old, PASSPORT, "c1", "u", T0 + R.SAME_CHAT_WINDOW_S + 1, iso)
    late = _rec("I ran today", T0 + DAY - 600)  # 23:50 and 00:10: "today" names two days
    assert not R.said_again(late, "I ran today", "c1", "u", T0 + DAY + 600, R.parse_time(None, T0 + DAY + 600).isoformat())


LUNCH = "Had lunch with Mia at the noodle bar near the office"


def test_identical_reports_days_apart_never_merge_and_carry_no_tags(mem):
    """Issue 40, case 3: two identical lunch reports five days apart were separated (one tagged with its
    date), then merged ("one text contains the other"), then separated again, ending as one memory with
    stacked tags. Events on different days never merge, whatever their words; the day stays metadata."""
    user = _user()
    mem.add(LUNCH, user, chat_id="c1", ts=T0 + 12 * 3600, infer=True)
    mem.add(LUNCH, user, chat_id="c2", ts=T0 + 5 * DAY + 12 * 3600, infer=True)
    for _ in range(3):  # nightly runs: nothing stacks, nothing merges
        assert mem.consolidate(user).merged == 0
    records = mem.get_all(user, "episodic")
    assert sorted(r.text for r in records) == [LUNCH, LUNCH]
    assert sorted(r.time_iso[:10] for r in records) == ["2026-01-01", "2026-01-06"]


def test_a_text_naming_the_other_day_may_still_be_one_event():
    """The hard rule leaves one door open: a text that names the other's day ("the concert on Monday")."""
    a = MemoryRecord(id=1, user_id="u", memory_type="episodic", ts=T0, chat_id="c1", who="u", text="concert",
                     metadata={"time": "2026-01-05T20:00:00+00:00"})
    b = MemoryRecord(id=2, user_id="u", memory_type="episodic", ts=T0 + 2 * DAY, chat_id="c2", who="u", text="concert",
                     metadata={"time": "2026-01-07T09:00:00+00:00"})
    assert R.different_days(a, b)
    assert not R.merge_allowed(a, b)[0]
    named = b.model_copy(update={"metadata": {**b.metadata, "named_date": "2026-01-05"}})
    assert R.different_days(a, named) == ""


def test_derived_memories_carry_the_turns_they_came_from(mem):
    """A distilled fact and a merge keep their sources' `turn_id`s in `source_turns` (issue 40: a chat hook can
    cite the turns behind any memory, and scripts/eval_chathook.py maps hits back to LoCoMo's turns)."""
    user = _user()
    mem.add(PASSPORT, user, chat_id="c1", ts=T0, metadata={"turn_id": "t1"}, infer=True)
    mem.add(PASSPORT, user, chat_id="c2", ts=T0 + 3600, metadata={"turn_id": "t2"}, infer=True)
    mem.add("I am allergic to peanuts", user, chat_id="c1", ts=T0 + 60, metadata={"turn_id": "t3"}, infer=True)
    stats = mem.consolidate(user)
    assert stats.merged == 1
    (merged,) = [r for r in mem.get_all(user, "episodic") if "4471" in r.text]
    assert merged.metadata["source_turns"] == ["t1", "t2"]
    facts = [r for r in mem.get_all(user, "semantic") if "peanuts" in r.text]
    assert facts and all(f.metadata["source_turns"] == ["t3"] for f in facts)
