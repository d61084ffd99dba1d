"""Shared pieces of the reliability suite: snapshots of a tenant, adversarial ids, and the counters
that docs/reliability.md quotes (printed at the end of a pytest run by conftest.py)."""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.store import filters as F

# What the suite measured in this run; conftest.py prints it in the terminal summary.
COUNTS: Counter[str] = Counter()

VICTIM = "victim"
VICTIM2 = "受害者🔒 o'brien"  # a second victim whose id itself needs escaping
VICTIM_SECRET = "victim's secret: the safe code is 4711"


def examples(n: int) -> int:
    """`n` examples in the CI profile (100 by default), scaled down with HYPOTHESIS_PROFILE=dev."""
    return max(5, n * settings.default.max_examples // 100)


def plant_victims(memory: Memory) -> dict[str, list[int]]:
    """Give both victims episodic and semantic memories with some history (an update, a delete)."""
    ids: dict[str, list[int]] = {}
    for uid in (VICTIM, VICTIM2):
        kept = [
            memory.add(VICTIM_SECRET, user_id=uid, chat_id="c1", ts=1_700_000_000).ids[0],
            memory.add("我住在杭州，养了一只猫", user_id=uid, chat_id="c2", ts=1_700_000_100).ids[0],
            memory.add("Prefers tea over coffee", user_id=uid, memory_type="semantic", ts=1_700_000_200).ids[0],
        ]
        memory.update(kept[1], "我住在杭州，养了两只猫", user_id=uid)
        gone = memory.add("to be deleted", user_id=uid).ids[0]
        memory.delete(gone, user_id=uid)
        ids[uid] = kept + [gone]
    return ids


def snapshot(memory: Memory, user_ids: tuple[str, ...] = (VICTIM, VICTIM2)) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every stored field of these tenants' rows (vectors included, hashed) and every history event,
    read straight from the store so that a bug in the facade's own scoping cannot hide a change."""
    scope = F.in_("user_id", list(user_ids))
    rows = memory.store.query(
        scope, fields=["id", "user_id", "memory_type", "ts", "chat_id", "who", "text", "hit_count", "metadata", "vector"]
    )
    row_key = sorted(
        (r["id"], r["user_id"], r["memory_type"], r["ts"], r["chat_id"], r["who"], r["text"], r["hit_count"],
         repr(sorted(r["metadata"].items())),
         hashlib.sha256(repr([round(float(x), 6) for x in r["vector"]]).encode()).hexdigest()[:16])
        for r in rows
    )
    events = memory.store.history(scope)
    event_key = sorted(
        (e["memory_id"], e["user_id"], e["action"], e.get("old_text"), e.get("new_text"), e["at"]) for e in events
    )
    return row_key, event_key


def total_rows(memory: Memory) -> int:
    return memory.store.count("")


def id_is_valid(value: str, max_bytes: int = 128) -> bool:
    """The documented rule for user_id / chat_id / who, written independently of validation.py."""
    if not value.strip():
        return False
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in value):
        return False
    return len(value.encode("utf-8")) <= max_bytes


# ---------------------------------------------------------------- adversarial ids
_FRAGMENTS = [
    '"', "'", "\\", '\\"', "\\\\", '" or "', "' or '", " or ", " OR ", "||", "&&", " and ", " AND ",
    " in ", " not in ", "not ", "[", "]", "(", ")", "{", "}", "==", "!=", ">=", "<", "user_id", "id",
    VICTIM, "victim ", " victim", "VICTIM", "受害者", "🔒", "1", "0", "true", "false", "%", "_", "*",
    "like", "LIKE", "$meta", "metadata", '["', '"]', "json_contains(", "text_match(", "#", "--", ";",
    "/*", "*/", " ", "\t", "\n", "\r", "\x00", "\x7f", "\x85", "\u3000", "\u200b", "\u2028", "\ufeff",
    "用户", "张三", "😀", "👩‍💻", "🇨🇳", "é", "e\u0301", "ß", "İ", "\U0010ffff",
]
_TEMPLATES = [
    '{x}" or user_id != "',
    '{x}" || user_id != "{x}',
    '{x}" or 1 == 1 or "',
    '{x}" or user_id in ["victim"] or "',
    '{x}") or (user_id == "victim',
    '{x}\\" or user_id != \\"',
    "{x}' or user_id != '",
    '{x}" and id > 0 or "',
    '{x}"] or metadata["thing"] != ["',
    "{x}",
    " {x} ",
]

adversarial_ids = st.one_of(
    st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=10).map("".join),
    st.builds(lambda t, x: t.format(x=x), st.sampled_from(_TEMPLATES), st.text(max_size=20)),
    st.text(min_size=1, max_size=40),
    st.text(alphabet=st.sampled_from(["字", "😀", '"', "\\", "a"]), min_size=30, max_size=140),  # byte-limit edge
)
