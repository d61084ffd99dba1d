"""What the agent helpers share: which model answers (and whether it is the offline rules), the
prompts directory, and a memory's score now. Above the facade: a `Memory` or a `Client` is used
through its public verbs only."""

from __future__ import annotations

import logging
from typing import Any

from ..lifecycle.policy import PRESETS, score_of
from ..llm import ChatModel
from ..llm.rules import RulesProvider
from ..models import MemoryRecord, now_ts

log = logging.getLogger("hippocampus.agent")


def resolve_model(memory: Any, llm: ChatModel | None) -> tuple[ChatModel, bool, str]:
    """(the model to ask, whether it is the offline rules provider, a warning or ""). `llm` wins;
    else the memory's own model (a Memory's `llm`); a Client has none, and a model that cannot be
    made (a missing API key) is a warning: both fall back to the offline rules."""
    warning = ""
    model = llm
    if model is None:
        try:
            model = getattr(memory, "llm", None)
        except Exception as exc:  # the configured provider cannot be made (ConfigError)
            warning = f"the configured model cannot be made ({exc}); the offline rules answer instead"
            model = None
    if model is None:
        model = RulesProvider()
    offline = isinstance(model, RulesProvider) or getattr(model, "model", None) == RulesProvider.model
    return model, offline, warning


def prompts_dir(memory: Any) -> Any:
    return getattr(getattr(memory, "config", None), "prompts_dir", None)


def score(memory: Any, record: MemoryRecord, now: int | None = None) -> float:
    """The memory's score now under the store's decay preset (a Client: the default preset)."""
    now = now_ts() if now is None else now
    scorer = getattr(memory, "score_now", None)
    if callable(scorer):
        return float(scorer(record, now))
    return float(score_of(record.life, now, PRESETS["default"]))


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
