"""ContradictionJudge: does a new fact make older facts untrue now?
Newest wins, nothing is erased: the caller marks what is superseded (lifecycle/supersede.py).

Pure: the new fact and its nearest older facts in, the older facts' ids out. The model sees the
older facts numbered 1..n, never their ids; a number outside the shown set is refused (logged and
dropped), so a model can never touch a memory it was not shown.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone

from ..models import MemoryRecord
from .base import Processor
from .results import SupersedeResult

log = logging.getLogger(__name__)
MAX_OLDER = 8  # older facts shown at once


def numbered(older: Sequence[MemoryRecord]) -> list[str]:
    """ "n. text (date)" for the prompt: short numbers stand in for ids."""
    return [f"{n}. {r.text} ({datetime.fromtimestamp(r.ts, tz=timezone.utc).date().isoformat()})"
            for n, r in enumerate(older, 1)]


class ContradictionJudge(Processor[SupersedeResult]):
    prompt_name = "contradiction_judge"
    result_model = SupersedeResult

    def judge(self, new: MemoryRecord, older: Sequence[MemoryRecord]) -> tuple[list[int], str]:
        """The ids among `older` that `new` supersedes, and the model's reason. Raises LLMError when
        the model fails (the caller leaves the fact unchecked for the next run)."""
        older = list(older)[:MAX_OLDER]
        if not older:
            return [], ""
        result = self.ask(new_fact={"text": new.text, "time": new.time_iso}, older_facts=numbered(older))
        shown = set(range(1, len(older) + 1))
        refused = [n for n in result.superseded if n not in shown]
        if refused:
            log.warning("contradiction judge named facts it was not shown (%s); ignored", refused)
        picked = sorted({n for n in result.superseded if n in shown})
        return [older[n - 1].id for n in picked], result.reason
