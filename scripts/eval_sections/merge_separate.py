"""Merge-or-separate section of scripts/eval_processors.py (tests/data/eval_merge_pairs.jsonl).

Each case is two episodes of one kind that an embedder scores alike; the label says whether
they are the same event. The Merger must judge same_event (a false merge loses a memory, so
`false_merges` is reported on its own); for the different-event pairs the Separator's
rewrite must keep each original's content words (`separation_keeps_facts`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hippocampus.errors import LLMError
from hippocampus.llm.rules.consolidation import content_tokens
from hippocampus.models import MemoryRecord
from hippocampus.processors import EpisodicMerger, EpisodicSeparator

KEEP_SHARE = 0.8  # share of an original's content words its rewritten text must still hold


def _record(m: dict[str, Any], memory_id: int) -> MemoryRecord:
    ts = int(datetime.fromisoformat(m["time"]).timestamp())
    meta = {"context": m.get("context", ""), "thing": m["text"], "time": m["time"], "chatid": m["chat_id"], "who": m.get("who", "user")}
    return MemoryRecord(id=memory_id, user_id="eval", memory_type="episodic", ts=ts, chat_id=m["chat_id"], who=m.get("who", "user"),
                        text=m["text"], metadata=meta)


def _kept(original: str, rewritten: str) -> bool:
    words = content_tokens(original)
    return not words or len(words & content_tokens(rewritten)) / len(words) >= KEEP_SHARE


def evaluate(llm: Any, cases: list[dict[str, Any]]) -> dict[str, float]:
    merger, separator = EpisodicMerger(llm), EpisodicSeparator(llm)
    tp = fp = fn = tn = errors = kept = separated = 0
    by_lang: dict[str, list[int]] = {}
    for case in cases:
        a, b = _record(case["a"], 1), _record(case["b"], 2)
        want = bool(case["same_event"])
        try:
            got = merger.merge(a, b).same_event
        except LLMError:
            errors += 1
            got = None
        ok = got is want
        tp += ok and want
        tn += ok and not want
        fp += (got is True) and not want
        fn += (got is not True) and want
        by_lang.setdefault(case.get("lang", "?"), []).append(int(ok))
        if not want:
            try:
                sep = separator.separate(a, b)
            except LLMError:
                errors += 1
                continue
            separated += 1
            kept += _kept(a.text, sep.text_a) and _kept(b.text, sep.text_b)
    n = len(cases)
    out = {"accuracy": (tp + tn) / n if n else float("nan"), "precision": tp / (tp + fp) if tp + fp else float("nan"),
           "recall": tp / (tp + fn) if tp + fn else float("nan"), "false_merges": fp}
    out.update({f"accuracy_{lang}": sum(v) / len(v) for lang, v in sorted(by_lang.items())})
    out.update({"separation_keeps_facts": kept / separated if separated else float("nan"), "errors": errors, "cases": n})
    return out


def register(add: Any) -> None:
    add("merge_separate", "eval_merge_pairs.jsonl", evaluate,
        ["accuracy", "precision", "recall", "false_merges", "accuracy_en", "accuracy_zh", "separation_keeps_facts", "errors", "cases"])
