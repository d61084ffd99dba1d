"""How memories age: one score in [0, 1], reinforcement on real use, decay as a pure function of
time, and the thresholds that archive, forget and review. Every rule here is a small pure function;
every number lives in one table.

The score is never rewritten nightly: a memory stores `importance` (its score at
`last_activated`) and the score at any moment is `effective_score(...)`, a function of the
category, that importance and the time since. Only a change of state (archived, forgotten) writes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict

from ..contract.defaults import INJECT_MAX_ITEMS, INJECT_MIN_SCORE
from ..models import Category, CustomCategory, DecayRule, Lifecycle, State
from ..models.base import Model

DAY = 86_400


PERMANENT = frozenset({Category.CORE, Category.SYSTEM})  # never decay, never removed by a job

# the LLM's high / medium / low importance become these scores
LEVELS: dict[str, float] = {"high": 0.8, "medium": 0.6, "low": 0.4}


NEVER = DecayRule()

_FACT_LIKE = (Category.PREFERENCE, Category.FACT, Category.WORKFLOW, Category.DECISION, Category.SKILL_USAGE)
_EPISODE_LIKE = (Category.EXPERIENCE, Category.TODO)


def _table(fact: DecayRule, episode: DecayRule) -> dict[Category, DecayRule]:
    table = dict.fromkeys(_FACT_LIKE, fact) | dict.fromkeys(_EPISODE_LIKE, episode)
    return table | dict.fromkeys(PERMANENT, NEVER)


_SEED_004 = DecayRule(grace_days=7, factor=0.99, period_days=1)
# The decay presets: a name for a table.
PRESETS: dict[str, dict[Category, DecayRule]] = {
    "default": _table(_SEED_004, _SEED_004),  # 7 days of grace, then x0.99 a day
    "fast": _table(  # per category: fact x0.85 per 5 days, episode x0.6 per 3 days, forgotten at 7 days
        DecayRule(factor=0.85, period_days=5, stepped=True),
        DecayRule(factor=0.6, period_days=3, stepped=True, forget_after_days=7),
    ),
    "off": _table(NEVER, NEVER),
}


class Thresholds(Model):
    """The lifecycle's thresholds and steps, all on the one [0, 1] scale."""

    model_config = ConfigDict(frozen=True)

    archive_below: float = 0.2
    forget_below: float = 0.05
    review_core_at: float = 0.9
    reinforce_step: float = 0.2  # s + (1 - s) * step
    cooldown_s: int = 2 * 3600  # uses within 2 h of the last counted one count once
    daily_cap: int = 3  # counted uses per memory per day (about +1.0 a day at +0.3 a use)
    inject_min_score: float = INJECT_MIN_SCORE
    inject_max_items: int = INJECT_MAX_ITEMS


THRESHOLDS = Thresholds()


def decay_table(preset: str, categories: Sequence[Any] = ()) -> dict[Any, DecayRule]:
    """The table a preset names, with a row for each of the project's own categories (MemoryConfig.categories:
    `decay` names a built-in category whose row it borrows in this preset, "never", or a rule's fields);
    ValueError for an unknown preset."""
    try:
        table: dict[Any, DecayRule] = PRESETS[preset]
    except KeyError:
        raise ValueError(f"unknown decay preset {preset!r}; use one of {sorted(PRESETS)}") from None
    if not categories:
        return table
    rows: dict[Any, DecayRule] = {}
    for spec in categories:
        if isinstance(spec.decay, dict):
            rows[CustomCategory(spec.name)] = DecayRule.model_validate(spec.decay)
        else:
            rows[CustomCategory(spec.name)] = NEVER if spec.decay == "never" else table[Category(spec.decay)]
    return {**table, **rows}


def _rule(table: dict[Any, DecayRule], category: Any) -> DecayRule:
    """A category's row; a project category no longer declared ages as a fact does."""
    rule = table.get(category)
    return rule if rule is not None else table.get(Category.FACT, NEVER)


def effective_score(category: Category, importance: float, last_activated: int, now: int,
                    table: dict[Category, DecayRule] = PRESETS["default"]) -> float:
    """The score at `now`: never above `importance`, never rising with time, and constant for
    core and system. A `now` before `last_activated` (clock skew) counts as no time at all."""
    rule = _rule(table, category)
    importance = min(1.0, max(0.0, float(importance)))
    days = max(0.0, (now - last_activated) / DAY)
    if rule.forget_after_days is not None and days >= rule.forget_after_days:
        return 0.0
    past = max(0.0, days - rule.grace_days) / rule.period_days
    if rule.stepped:
        past = math.floor(past)
    return importance * rule.factor ** past if past else importance


def state_for(category: Category, score: float, thresholds: Thresholds = THRESHOLDS) -> State:
    """Which state a score puts a memory in; core and system stay active whatever the score."""
    if category in PERMANENT:
        return State.ACTIVE
    if score < thresholds.forget_below:
        return State.FORGOTTEN
    if score < thresholds.archive_below:
        return State.ARCHIVED
    return State.ACTIVE


def reinforced(score: float, thresholds: Thresholds = THRESHOLDS) -> float:
    """One counted use: s + (1 - s) * step; stays in [0, 1] and never lowers the score."""
    score = min(1.0, max(0.0, float(score)))
    return min(1.0, score + (1.0 - score) * thresholds.reinforce_step)


def counts_as_use(last_counted: int | None, uses_day: int | None, uses_today: int, now: int,
                  thresholds: Thresholds = THRESHOLDS) -> bool:
    """Whether a use at `now` raises the score: not within the cooldown of the last counted one,
    and not past the daily cap (days are UTC days since the epoch)."""
    if last_counted is not None and 0 <= now - last_counted < thresholds.cooldown_s:
        return False
    today = now // DAY
    return not (uses_day == today and uses_today >= thresholds.daily_cap)


def score_of(life: Lifecycle, now: int, table: dict[Category, DecayRule] = PRESETS["default"]) -> float:
    return effective_score(life.category, life.importance, life.last_activated, now, table)


def use(life: Lifecycle, now: int, table: dict[Category, DecayRule] = PRESETS["default"],
        thresholds: Thresholds = THRESHOLDS) -> Lifecycle:
    """A real use at `now` (mark_used, never a mere retrieval): when it counts (cooldown, daily cap)
    the score is reinforced from its decayed value, `last_activated` becomes now and an archived
    memory whose score climbs back is active again; otherwise nothing changes."""
    last = life.last_activated if life.activation_count else None  # the creation itself is no counted use
    if not counts_as_use(last, life.uses_day, life.uses_today, now, thresholds):
        return life
    score = reinforced(score_of(life, now, table), thresholds)
    today = now // DAY
    state = life.state
    if state is State.ARCHIVED and state_for(life.category, score, thresholds) is State.ACTIVE and not _expired(life, now):
        state = State.ACTIVE
    return life.model_copy(update={
        "importance": score, "last_activated": now, "activation_count": life.activation_count + 1,
        "uses_day": today, "uses_today": (life.uses_today if life.uses_day == today else 0) + 1, "state": state,
    })


def _expired(life: Lifecycle, now: int) -> bool:
    return life.expires_at is not None and now > life.expires_at


def next_state(life: Lifecycle, now: int, table: dict[Category, DecayRule] = PRESETS["default"],
               thresholds: Thresholds = THRESHOLDS) -> State:
    """Where the decay step moves a memory: forgotten below the forget threshold, archived below
    the archive threshold or past its todo date; core and system stay; nothing comes back to
    active by time alone (only a use does)."""
    if life.category in PERMANENT:
        return life.state
    by_score = state_for(life.category, score_of(life, now, table), thresholds)
    if by_score is State.FORGOTTEN:
        return State.FORGOTTEN
    if by_score is State.ARCHIVED or _expired(life, now):
        return State.ARCHIVED
    return life.state


def merged(a: Lifecycle, b: Lifecycle, now: int, table: dict[Category, DecayRule] = PRESETS["default"]) -> Lifecycle:
    """One memory made of two (a consolidation merge): the higher score now, the uses added up,
    the first one's category unless the other is permanent, active."""
    category = b.category if b.category in PERMANENT and a.category not in PERMANENT else a.category
    expiries = [e for e in (a.expires_at, b.expires_at) if e is not None]
    return Lifecycle(importance=max(score_of(a, now, table), score_of(b, now, table)), category=category,
                     last_activated=now, activation_count=a.activation_count + b.activation_count,
                     expires_at=max(expiries) if expiries else None)


def superseded(life: Lifecycle, by: int, at: int, now: int, table: dict[Category, DecayRule] = PRESETS["default"]) -> Lifecycle:
    """An older fact a newer one made untrue (newest wins, nothing erased): valid until `at`, replaced
    by `by`, its score halved; it stays readable in history and with include_superseded."""
    return life.model_copy(update={"valid_to": at, "superseded_by": by, "importance": score_of(life, now, table) * 0.5,
                                   "last_activated": now})
