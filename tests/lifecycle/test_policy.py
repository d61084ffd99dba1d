"""The lifecycle policy (hippocampus/lifecycle/policy.py): pure rules, checked as properties
(decay monotone, core never decays, reinforcement bounded with cooldown and cap) and against the
seeds' numbers (seed 004's 7-day grace and x0.99 a day, seed 003's fast table)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hippocampus.lifecycle import policy as P
from hippocampus.lifecycle.categories import guess_category, new_life, todo_expiry
from hippocampus.models import Category, Lifecycle, MemoryType, State, now_ts

DAY = P.DAY
categories = st.sampled_from(list(Category))
presets = st.sampled_from(sorted(P.PRESETS))
scores = st.floats(0.0, 1.0)
times = st.integers(0, 400 * DAY)


@given(categories, scores, times, times, times, presets)
def test_decay_is_monotone_in_time_and_never_raises_a_score(category, importance, t0, d1, d2, preset):
    table = P.PRESETS[preset]
    early, late = t0 + min(d1, d2), t0 + max(d1, d2)
    s_early = P.effective_score(category, importance, t0, early, table)
    s_late = P.effective_score(category, importance, t0, late, table)
    assert 0.0 <= s_late <= s_early <= importance


@given(st.sampled_from(sorted(P.PERMANENT)), scores, times, times, presets)
def test_core_and_system_never_decay_or_leave_active(category, importance, t0, dt, preset):
    assert P.effective_score(category, importance, t0, t0 + dt, P.PRESETS[preset]) == pytest.approx(importance)
    life = Lifecycle(importance=importance, category=category, last_activated=t0)
    assert P.next_state(life, t0 + dt, P.PRESETS[preset]) is State.ACTIVE


def test_seed_004_default_grace_then_one_percent_a_day():
    table = P.PRESETS["default"]
    assert P.effective_score(Category.FACT, 0.8, 0, 7 * DAY, table) == 0.8
    assert P.effective_score(Category.FACT, 0.8, 0, 17 * DAY, table) == pytest.approx(0.8 * 0.99 ** 10)
    assert P.effective_score(Category.FACT, 0.8, 0, -DAY, table) == 0.8  # clock skew: no time passed


def test_seed_003_fast_table_steps_per_period_and_forgets_episodes_at_seven_days():
    fast = P.PRESETS["fast"]
    assert P.effective_score(Category.FACT, 1.0, 0, 4 * DAY, fast) == 1.0
    assert P.effective_score(Category.FACT, 1.0, 0, 5 * DAY, fast) == pytest.approx(0.85)
    assert P.effective_score(Category.EXPERIENCE, 1.0, 0, 3 * DAY, fast) == pytest.approx(0.6)
    assert P.effective_score(Category.EXPERIENCE, 1.0, 0, 7 * DAY, fast) == 0.0
    assert P.state_for(Category.EXPERIENCE, 0.0) is State.FORGOTTEN


def test_thresholds_archive_below_point_two_forget_below_point_oh_five():
    assert P.state_for(Category.FACT, 0.2) is State.ACTIVE
    assert P.state_for(Category.FACT, 0.19) is State.ARCHIVED
    assert P.state_for(Category.FACT, 0.049) is State.FORGOTTEN
    with pytest.raises(ValueError, match="unknown decay preset"):
        P.decay_table("slow")


@given(scores, st.lists(st.integers(0, 6 * 3600), max_size=30), st.sampled_from(list(Category)))
def test_reinforcement_stays_in_unit_interval_respects_cooldown_and_daily_cap(importance, gaps, category):
    life = Lifecycle(importance=importance, category=category, last_activated=0)
    now = 10 * DAY
    counted_at: list[int] = []
    for gap in gaps:
        now += gap
        before = life
        life = P.use(life, now)
        assert 0.0 <= life.importance <= 1.0
        if life != before:
            counted_at.append(now)
            assert life.importance >= P.score_of(before, now) - 1e-12  # a counted use never lowers the score
    for a, b in zip(counted_at, counted_at[1:]):
        assert b - a >= P.THRESHOLDS.cooldown_s
    per_day: dict[int, int] = {}
    for t in counted_at:
        per_day[t // DAY] = per_day.get(t // DAY, 0) + 1
    assert all(n <= P.THRESHOLDS.daily_cap for n in per_day.values())


def test_a_use_reinforces_by_a_fifth_of_the_gap_and_revives_an_archived_memory():
    life = Lifecycle(importance=0.5, category=Category.FACT, last_activated=0)
    used = P.use(life, 3 * DAY)
    assert used.importance == pytest.approx(0.5 + 0.5 * 0.2)
    assert (used.activation_count, used.last_activated, used.uses_today) == (1, 3 * DAY, 1)
    assert P.use(used, 3 * DAY + 3600) == used  # within the cooldown: counted once
    archived = Lifecycle(importance=0.19, category=Category.FACT, last_activated=0, state=State.ARCHIVED)
    assert P.use(archived, DAY).state is State.ACTIVE  # 0.19 -> 0.352


def test_an_expired_todo_is_archived_and_a_dated_todo_expires_at_the_end_of_its_day():
    assert todo_expiry("remind me to pay rent on 2026-12-01", 0) == 1_796_169_599
    assert todo_expiry("I need to call the bank tomorrow", 0) == 2 * DAY - 1
    assert todo_expiry("I need to call the bank", 0) is None
    life = new_life("remind me to call the bank tomorrow", MemoryType.EPISODIC, 100, 100)
    assert life.category is Category.TODO and life.expires_at == 2 * DAY - 1
    assert P.next_state(life, 2 * DAY, P.PRESETS["default"]) is State.ARCHIVED
    assert P.next_state(life, DAY, P.PRESETS["default"]) is State.ACTIVE


@pytest.mark.parametrize("text, mtype, category", [
    ("I really like jazz", MemoryType.EPISODIC, Category.PREFERENCE),
    ("我最喜欢吃火锅", MemoryType.EPISODIC, Category.PREFERENCE),
    ("提醒我明天交报告", MemoryType.EPISODIC, Category.TODO),
    ("We decided to move to Lisbon", MemoryType.EPISODIC, Category.DECISION),
    ("Went to the lake with Ana", MemoryType.EPISODIC, Category.EXPERIENCE),
    ("Alice is a nurse", MemoryType.SEMANTIC, Category.FACT),
    ("The user prefers green tea to coffee", MemoryType.SEMANTIC, Category.PREFERENCE),  # a distilled preference
    ("The user lives in Lisbon", MemoryType.SEMANTIC, Category.FACT),
])
def test_the_degraded_category_guess(text, mtype, category):
    assert guess_category(text, mtype) is category


def test_a_damaged_or_missing_lifecycle_entry_reads_as_the_defaults_with_the_clock_starting_now():
    for meta in ({}, {"life": "garbage"}, {"life": {"importance": 7, "category": "fact", "last_activated": 5}}):
        life = Lifecycle.of(meta, MemoryType.SEMANTIC)
        assert (life.importance, life.category, life.state) == (0.6, Category.FACT, State.ACTIVE)
        assert life.last_activated >= now_ts() - 60 and Lifecycle.stored_in(meta) is None


def test_a_merge_keeps_the_higher_score_and_the_uses():
    a = Lifecycle(importance=0.9, category=Category.PREFERENCE, last_activated=0, activation_count=2)
    b = Lifecycle(importance=0.4, category=Category.CORE, last_activated=0, activation_count=1)
    m = P.merged(a, b, 100 * DAY)
    assert m.category is Category.CORE and m.activation_count == 3
    assert m.importance == pytest.approx(max(P.score_of(a, 100 * DAY), 0.4))  # the core one never decayed
