"""Merge-or-separate section of scripts/eval_processors.py (tests/data/eval_merge_pairs.jsonl).

Each case is two episodes and a `kind`: `duplicate` (one event told twice: merge), `look_alike`
(two events of one kind, such as two dentist visits a week apart: keep apart) or `unrelated`; and
`must_keep`, the facts (numbers with units, names, dates) that must survive a merge, each a string
or a list of spellings. The Merger judges same_event: `merges_found` counts the duplicates merged,
`wrong_merges` the other pairs merged (a false merge loses a memory), `facts_lost` the must_keep
facts missing from the merged texts of the duplicates (`guard_stepped_in`: merges whose text the
facts guard had to ask again for or build itself). For the pairs that are not one event, the
Separator's rewrites must keep each original's facts (`separation_facts_lost`) and content words
(`separation_keeps_facts`: the share of pairs keeping 80%).
"""

from __future__ import annotations

from typing import Any

from hippocampus.errors import LLMError
from hippocampus.llm.rules.consolidation import content_tokens
from hippocampus.processors import EpisodicMerger, EpisodicSeparator
from scripts.eval_common import Confusion, keeps, lost, prompts_dir, ratio, record

KEEP_SHARE = 0.8  # share of an original's content words its rewritten text must still hold
METRICS = ["accuracy", "precision", "recall", "merges_found", "duplicates", "wrong_merges", "facts_lost", "facts_kept",
           "guard_stepped_in", "accuracy_en", "accuracy_zh", "separation_facts_lost", "separation_keeps_facts", "errors", "cases"]


def _kept(original: str, rewritten: str) -> bool:
    words = content_tokens(original)
    return not words or len(words & content_tokens(rewritten)) / len(words) >= KEEP_SHARE


def _separation_lost(case: dict[str, Any], text_a: str, text_b: str) -> list[str]:
    """must_keep facts a rewrite dropped: each is checked in the rewrite of the memory that stated it."""
    out = []
    for item in case.get("must_keep", []):
        if keeps(case["a"]["text"], item):
            where = text_a
        elif keeps(case["b"]["text"], item):
            where = text_b
        else:
            where = f"{text_a}\n{text_b}"
        out += lost(where, [item])
    return out


def evaluate(llm: Any, cases: list[dict[str, Any]]) -> dict[str, float]:
    merger, separator = EpisodicMerger(llm, prompts_dir()), EpisodicSeparator(llm, prompts_dir())
    tally, errors = Confusion(), 0
    kept = separated = facts_checked = facts_lost = guard = sep_lost = 0
    for case in cases:
        a, b = record(case["a"], case["id"], 1), record(case["b"], case["id"], 2)
        want = bool(case["same_event"])
        try:
            result = merger.merge(a, b)
            got: bool | None = result.same_event
        except LLMError:
            errors += 1
            result, got = None, None
        tally.add(got, want, f"accuracy_{case.get('lang', '?')}", f"accuracy_kind_{case.get('kind', '?')}")
        if got and want and result is not None:
            items = case.get("must_keep", [])
            facts_checked += len(items)
            facts_lost += len(lost(result.text, items))
            guard += getattr(result, "facts_path", "model") != "model"
        if not want:
            try:
                sep = separator.separate(a, b)
            except LLMError:
                errors += 1
                continue
            separated += 1
            kept += _kept(a.text, sep.text_a) and _kept(b.text, sep.text_b)
            sep_lost += len(_separation_lost(case, sep.text_a, sep.text_b))
    n = len(cases)
    out: dict[str, float] = tally.metrics(n)
    out.update({"merges_found": tally.tp, "duplicates": tally.tp + tally.fn, "wrong_merges": tally.fp, "facts_lost": facts_lost,
                "facts_kept": ratio(facts_checked - facts_lost, facts_checked), "guard_stepped_in": guard})
    out.update({"separation_facts_lost": sep_lost, "separation_keeps_facts": ratio(kept, separated), "errors": errors, "cases": n})
    return out


def register(add: Any) -> None:
    add("merge_separate", "eval_merge_pairs.jsonl", evaluate, METRICS)
