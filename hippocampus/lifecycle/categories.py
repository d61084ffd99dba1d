"""The honest degraded guess of a new memory's category, importance and todo date, for memories
that no model labelled (infer=False, the offline rules provider, consolidation's facts). Patterns
only where they are near certain; everything else is an experience (episodes) or a fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING

from ..config import zone
from ..errors import InvalidInput
from ..models import AnyCategory, Category, CustomCategory, Lifecycle, MemoryType
from ..text.dates import expiry
from ..text.lazy import lazy_compile
from ..text.requests import prefers_text
from . import when

if TYPE_CHECKING:
    from ..config import CategorySpec

_TODO = lazy_compile(
    r"\b(remind me|i need to|i have to|i must|i should|todo|to-do|don'?t forget to|i'?ll need to)\b"
    r"|提醒我|我要记得|待办|需要去|得去|记得要|别忘了",
    re.IGNORECASE,
)
_PREFERENCE = lazy_compile(
    r"\bi (really )?(like|love|prefer|hate|dislike|enjoy|can'?t stand)\b|\bmy favou?rite\b"
    r"|\b(the )?user (really )?(likes|loves|prefers|hates|dislikes|enjoys)\b|\b(the )?user'?s favou?rite\b"  # a distilled fact
    r"|(我|用户)(很|最|特别|不)?(喜欢|爱|讨厌|偏好|更喜欢)|最喜欢",
    re.IGNORECASE,
)
_DECISION = lazy_compile(r"\bi (have )?decided\b|\bwe (have )?decided\b|\bi'?m going with\b|决定", re.IGNORECASE)
_WORKFLOW = lazy_compile(r"\b(always|usually) (run|deploy|use|do)\b|\bmy workflow\b|流程|每次都先", re.IGNORECASE)


_PERMANENT_NAMES = ("core", "system")  # set by promotion or the operator, never by a guess or a model
_CJK_WORD = lazy_compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_NOT_WORD = lazy_compile(r"[^\w\u3400-\u9fff]+")


def _norm(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def _keyword(word: str) -> re.Pattern[str]:
    """A declared keyword: a substring in Chinese or Japanese, a whole word (plural allowed) elsewhere."""
    if _CJK_WORD.search(word):
        return re.compile(re.escape(word), re.IGNORECASE)
    return re.compile(r"(?<!\w)" + re.escape(word) + r"(?:s|es)?(?!\w)", re.IGNORECASE)


def declared_match(text: str, spec: CategorySpec) -> str | None:
    """The keyword (or whole example) of `spec` that `text` contains, or None. Offline and certain only
    as far as the operator's words are: "health" also matches "a health food shop" (docs/categories.md)."""
    for word in spec.keywords:
        if _keyword(word).search(text):
            return word
    said = f" {_norm(text)} "
    return next((ex for ex in spec.examples if _norm(ex) and f" {_norm(ex)} " in said), None)


def first_match(text: str, declared: Sequence[CategorySpec], *, refused: bool | None = None) -> tuple[CategorySpec, str] | None:
    """The first declared category (config order) whose keywords or examples `text` contains, with the
    word; `refused` True / False keeps only the sensitive (never_store) ones / only the others."""
    for spec in declared:
        if refused is None or spec.refused == refused:
            word = declared_match(text, spec)
            if word is not None:
                return spec, word
    return None


def category_names(declared: Sequence[CategorySpec] = ()) -> list[str]:
    """Every category name a memory may have: the built-in ones, then the project's own."""
    return [c.value for c in Category] + [spec.name for spec in declared]


def parse_category(name: str | AnyCategory, declared: Sequence[CategorySpec] = ()) -> AnyCategory:
    """A category a person names (curate, the UI): a built-in one or a declared one; InvalidInput else."""
    raw = getattr(name, "value", name)
    try:
        return Category(raw)
    except ValueError:
        pass
    if raw in {spec.name for spec in declared}:
        return CustomCategory(raw)
    raise InvalidInput(f"unknown category {raw!r}; use one of {category_names(declared)}")


def model_category(name: str, declared: Sequence[CategorySpec] = ()) -> AnyCategory | None:
    """The category a model gave, validated: a built-in one (never core or system) or a declared one;
    None for anything else (the guess decides), so a model never invents a category."""
    name = str(name or "").strip().lower()
    if name in _PERMANENT_NAMES:
        return None
    try:
        return parse_category(name, declared)
    except InvalidInput:
        return None


def with_declared(text: str, memory_type: MemoryType, given: AnyCategory, declared: Sequence[CategorySpec]) -> AnyCategory:
    """The category a row keeps: a declared category whose keywords the text holds replaces the built-in
    category the rules would guess anyway (never one a model or a person chose differently, never core)."""
    if not declared or isinstance(given, CustomCategory) or given is not guess_category(text, memory_type):
        return given
    found = first_match(text, declared)
    return CustomCategory(found[0].name) if found is not None else given


def guess_category(text: str, memory_type: MemoryType) -> Category:
    """todo, preference, decision or workflow when a pattern says so; else experience / fact."""
    if prefers_text(text) and not _TODO.search(text):  # "can you stop giving me Windows shortcuts? I'm on a Mac" (text/requests.py)
        return Category.PREFERENCE
    for pattern, category in ((_TODO, Category.TODO), (_PREFERENCE, Category.PREFERENCE),
                              (_DECISION, Category.DECISION), (_WORKFLOW, Category.WORKFLOW)):
        if pattern.search(text):
            return category
    if memory_type is MemoryType.PROCEDURAL:
        return Category.SKILL_USAGE  # a tool-call sequence that worked
    return Category.FACT if memory_type is MemoryType.SEMANTIC else Category.EXPERIENCE


def guess_importance(text: str) -> float:
    """An explicit "remember" is high (0.8), anything else medium (0.6): the importance levels (when.importance)."""
    return when.importance(text)


def todo_expiry(text: str, said_ts: int, tz: tzinfo | None = None) -> int | None:
    """The end of the day a todo names (an ISO date, today / tomorrow / next Friday / 明天 / 下周二 ...), resolved
    from when it was said, in the user's zone (the machine's when None); None when it names none (when.py)."""
    return expiry(text, said_ts, tz or zone())


def new_life(text: str, memory_type: MemoryType, now: int, event_ts: int, category: AnyCategory | None = None,
             importance: float | None = None, *, said: str | None = None, tz: tzinfo | None = None) -> Lifecycle:
    """The lifecycle fields of a memory written now; a given category wins over the guess. `event_ts` is when
    the turn was said; `said`, the turn as the user said it (a fresh write): the one importance rule reads it
    (an explicit "remember" is at least 0.8, whatever the memory's text kept), and a todo's day is looked for
    in the memory's text, then in it. Without `said` (an import, a restore) a given importance is kept as is."""
    category = category or guess_category(text, memory_type)
    expires = None
    if category is Category.TODO:
        expires = todo_expiry(text, event_ts, tz)
        if expires is None and said:
            expires = todo_expiry(said, event_ts, tz)
    if said is not None:
        score = when.importance(said or text, importance, memory=text)
    else:
        score = guess_importance(text) if importance is None else importance
    return Lifecycle(importance=score, category=category, last_activated=now, expires_at=expires)
