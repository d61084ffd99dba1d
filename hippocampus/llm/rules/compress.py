"""Offline rules for the FactCompressor: a degraded compression that never loses a fact.

No understanding, so no summary: facts that say the same words (normalise_fact: case, punctuation,
spacing and a leading subject ignored) are kept once, the newest wording first; the rest are joined
into lines ("; " between English facts, "；" between Chinese ones). A pattern is one line; a target of
three keeps the first two facts as they are and joins the tail into the third line. Every source
sentence survives word for word, so the fact guard always passes.
"""

from __future__ import annotations

import re
from typing import Any

from ...text import HAS_CJK, normalise_fact
from . import rule

_END = re.compile(r"[\s。；;，,、]+$|(?<=[a-z\u4e00-\u9fff])\.$")  # not the dot of "U.S." or "3."


def distinct(facts: list[str]) -> list[str]:
    """The facts without those that repeat an earlier one's words (the first wording kept). Pure."""
    seen: set[str] = set()
    out: list[str] = []
    for fact in facts:
        text = " ".join(str(fact).split())
        key = normalise_fact(text) or text
        if text and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def joined(facts: list[str]) -> str:
    """One line holding every fact, in order: "；" when the facts are Chinese, else "; "."""
    parts = [_END.sub("", f) or f for f in facts]
    return ("；" if any(HAS_CJK.search(p) for p in parts) else "; ").join(parts)


def compressed(facts: list[str], max_facts: int) -> list[str]:
    """At most `max_facts` lines (at least one): the first facts as they are, the tail joined. Pure."""
    facts = distinct(facts)
    keep = max(1, max_facts)
    if len(facts) <= keep:
        return facts
    return facts[: keep - 1] + [joined(facts[keep - 1 :])]


@rule("fact_compressor")
def _fact_compressor(inputs: dict[str, Any]) -> dict[str, Any]:
    facts = [str(f.get("text") or "") if isinstance(f, dict) else str(f) for f in inputs.get("facts") or []]
    target = inputs.get("target") or {}
    try:
        max_facts = int(target.get("max_facts", 1)) if isinstance(target, dict) else 1
    except (TypeError, ValueError):
        max_facts = 1
    lines = compressed(facts, max_facts)
    return {"facts": lines, "reason": f"rules: {len(facts)} facts as {len(lines)} line(s), repeats dropped, nothing summarised"}
