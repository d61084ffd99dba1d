"""A memory's lifecycle fields (importance, category, state and their times), kept inside its metadata
under LIFE_KEY; how they change is lifecycle/'s, what they are is here."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Model
from .categories import AnyCategory, Category
from .clock import now_ts
from .kinds import MemoryType, State

LIFE_KEY = "life"  # where a memory's lifecycle fields live inside its metadata (validation.OWNED_KEYS)
DEFAULT_IMPORTANCE = 0.6  # the "medium" importance level


class Lifecycle(Model):
    """How a memory ages (lifecycle/policy.py): `importance` is its score at `last_activated`, the
    score now is a pure function of both and the category. Explicit times, Graphiti's way:
    `valid_to` and `superseded_by` when a newer fact replaced it, `expires_at` for a dated todo.
    A memory written before lifecycle existed reads with these defaults (no migration writes)."""

    importance: float = Field(DEFAULT_IMPORTANCE, ge=0.0, le=1.0)
    category: AnyCategory = Field(Category.EXPERIENCE, union_mode="left_to_right")
    state: State = State.ACTIVE
    last_activated: int = 0
    activation_count: int = Field(0, ge=0)
    uses_day: int | None = None  # the UTC day (epoch days) of the counted uses in uses_today
    uses_today: int = Field(0, ge=0)
    valid_to: int | None = None
    superseded_by: int | None = None
    expires_at: int | None = None
    reviewed_at: int | None = None  # the MemoryReviewer's last look (asked again only after a later use)

    @classmethod
    def of(cls, metadata: dict[str, Any], memory_type: MemoryType) -> Lifecycle:
        """The stored fields, or, for a memory written before lifecycle existed (or a damaged entry),
        the defaults with the clock starting now: nothing ages until the decay step stamps it, so an
        upgrade never archives or forgets a row at once."""
        found = cls.stored_in(metadata)
        if found is not None:
            return found
        category = Category.FACT if memory_type is MemoryType.SEMANTIC else Category.EXPERIENCE
        return cls(category=category, last_activated=now_ts())

    @classmethod
    def stored_in(cls, metadata: dict[str, Any]) -> Lifecycle | None:
        """The valid lifecycle entry of this metadata, or None (missing or damaged)."""
        raw = metadata.get(LIFE_KEY)
        if isinstance(raw, dict) and "category" in raw and "last_activated" in raw:
            try:
                return cls.model_validate(raw)
            except ValueError:
                return None
        return None

    def stored(self) -> dict[str, Any]:
        """What goes into metadata[LIFE_KEY]: JSON, None fields left out."""
        return self.model_dump(mode="json", exclude_none=True)
