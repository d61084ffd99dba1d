"""What a memory is about: the built-in categories, a project's own (a valid name, declared in
MemoryConfig.categories as a CategorySpec) and DecayRule, a row of the decay table a category ages by
(declared here, beside CategorySpec which validates one, so that the kernel needs no lifecycle/)."""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from .base import Model


class Category(str, Enum):
    """What a memory is about (preference, fact, experience, workflow, ...), plus core (promoted, never
    decays) and system (set by the operator)."""

    PREFERENCE = "preference"
    FACT = "fact"
    EXPERIENCE = "experience"
    WORKFLOW = "workflow"
    DECISION = "decision"
    SKILL_USAGE = "skill_usage"
    TODO = "todo"
    CORE = "core"
    SYSTEM = "system"


CATEGORY_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")  # a project's own category name (MemoryConfig.categories)


class CustomCategory(str):
    """A project's own category (MemoryConfig.categories, docs/categories.md): a name used where a
    Category is; `.value` is the name, as for a Category, so every face shows and filters it alike."""

    def __new__(cls, name: str) -> CustomCategory:
        if not CATEGORY_NAME.match(str(name)):
            raise ValueError(f"a category name is lower-case letters, digits and _ (at most 32), got {name!r}")
        return super().__new__(cls, str(name))

    @property
    def value(self) -> str:
        return str.__str__(self)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(cls, core_schema.str_schema(),
                                                            serialization=core_schema.to_string_ser_schema())


AnyCategory = Category | CustomCategory  # a built-in category first; any other valid name is a project's own


class DecayRule(Model):
    """A row of the decay table (lifecycle/policy.py), declared beside CategorySpec, which validates a project's
    own: score = importance * factor ** (days past grace / period); `stepped` counts whole periods
    only ("x 0.85 per 5 days"); past `forget_after_days` without use the score is 0."""

    model_config = ConfigDict(frozen=True)

    grace_days: float = 0.0
    factor: float = Field(1.0, gt=0.0, le=1.0)
    period_days: float = Field(1.0, gt=0.0)
    stepped: bool = False
    forget_after_days: float | None = None


_DECAY_BORROW = (*(c.value for c in Category), "never")  # a custom category's decay: a built-in's row, or a rule


class CategorySpec(Model):
    """A project's own category, declared in MemoryConfig.categories (docs/categories.md): name and description for the models, its decay row,
    keywords and examples that assign it offline, and whether the rules refuse what matches it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = Field("", max_length=500)
    decay: str | dict[str, Any] = "fact"
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    sensitive: bool = False
    never_store: bool = False

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        value = value.strip()
        if not CATEGORY_NAME.match(value):
            raise ValueError(f"category name {value!r}: lower-case letters, digits and _, at most 32, a letter first")
        if value in {c.value for c in Category}:
            raise ValueError(f"category {value!r} is built in; give a project's own category another name")
        return value

    @field_validator("keywords", "examples")
    @classmethod
    def _check_words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        words = tuple(" ".join(str(w).split()) for w in value)
        if any(not w or len(w) > 200 or not w.isprintable() for w in words) or len(words) > 200:
            raise ValueError("keywords and examples are at most 200 non-empty printable strings of at most 200 characters")
        return words

    @field_validator("decay")
    @classmethod
    def _check_decay(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(value, str):
            if value not in _DECAY_BORROW:
                raise ValueError(f"decay {value!r}: a built-in category ({', '.join(_DECAY_BORROW)}) or a rule's fields")
            return value
        return DecayRule.model_validate(value).model_dump()  # ValueError naming the bad field

    @property
    def refused(self) -> bool:
        """Whether the rules refuse a write that matches this category (sensitive or never_store)."""
        return self.sensitive or self.never_store
