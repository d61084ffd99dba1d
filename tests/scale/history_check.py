"""A history-replay checker (issue 34): every memory's history events, replayed in order, must give
the memory's final state, so a double merge, a lost write or a half-finished run shows up as a
difference. Used at the end of the replica harness (test_replicas.py), after the SIGKILL case, and by
`scripts/bench_replicas.py --check` against any Milvus URI.

What is replayed (per memory id, events ordered by their time, then by their id in the store):
- a creation (`created`, a `merged` event carrying `merged_from_ids`, `restored` with `restored_from`)
  makes the memory exist with the event's `new_text` (a merged record: its sources' ids);
- `updated`, `separated`, `reconsolidated` set the text to `new_text` (when given);
- `deleted`, `forgotten`, a `merged` event carrying `merged_into` remove it;
- `archived`, `compressed` archive it, `reactivated` and `restored` make it active; other events
  (hits, distillation marks, reviews, promotions, supersession, graph pruning) leave text and
  existence alone and, where they may move the state, make it unknown (not checked).

Then, against the store: a live memory must have been created by its history, with the replayed
text, state and merged_from_ids; a memory id named by history but gone from the store must have
been removed by its history (a delete, a forget, a merge); a merge's target named by `merged_into`
must exist or have been removed by its own history; the sources of a live merged record are gone
and say they were merged into it; no two live records share a `merge_key` (or a `distill_key`:
one distilled fact per source episode and wording); with `settled`, no merge is left pending.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hippocampus.models import LIFE_KEY
from hippocampus.models import HistoryAction as A
from hippocampus.store import MilvusStore
from hippocampus.store import filters as F

_TEXT = {A.UPDATED.value, A.SEPARATED.value, A.RECONSOLIDATED.value}
_GONE = {A.DELETED.value, A.FORGOTTEN.value}
_UNKNOWN_STATE = {A.PROMOTED.value, A.REVIEWED.value, A.UPDATED.value}


@dataclass
class Replayed:
    """One memory as its history tells it."""

    created: bool = False
    exists: bool = False
    text: str | None = None
    state: str | None = None  # None: not determined by the events
    merged_from: list[int] | None = None
    merged_into: int | None = None
    events: int = 0
    told: list[str] = field(default_factory=list, compare=False)  # "action by actor", in order: named in a problem


@dataclass
class HistoryReport:
    memories: int = 0  # live memories checked
    events: int = 0  # history events replayed
    merged: int = 0  # live merged records
    problems: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        head = f"{self.memories} memories, {self.events} events, {self.merged} merged records: "
        return head + ("history consistent" if not self.problems else f"{len(self.problems)} problems:\n  " + "\n  ".join(self.problems[:40]))


def replay(events: Iterable[dict[str, Any]]) -> dict[int, Replayed]:
    """Each memory id's state after its events, in the order given (the store's: by time, then event id). Pure."""
    out: dict[int, Replayed] = {}
    for e in events:
        mid = int(e.get("memory_id") or 0)
        if mid == 0:  # a run-level event (decay_run): no memory
            continue
        m = out.setdefault(mid, Replayed())
        m.events += 1
        action, details = e.get("action"), e.get("details") or {}
        m.told.append(f"{action} by {e.get('actor')}")
        if action == A.CREATED.value or (action == A.MERGED.value and "merged_from_ids" in details) or (
                action == A.RESTORED.value and "restored_from" in details):
            m.created = m.exists = True
            m.text = e.get("new_text")
            m.state = "active" if action == A.RESTORED.value else None
            m.merged_from = sorted(int(i) for i in details["merged_from_ids"]) if action == A.MERGED.value else None
        elif action in _GONE or (action == A.MERGED.value and "merged_into" in details):
            m.exists = False
            m.merged_into = int(details["merged_into"]) if "merged_into" in details else None
        elif action in _TEXT and e.get("new_text") is not None:
            m.text = e["new_text"]
        if action in (A.ARCHIVED.value, A.COMPRESSED.value):
            m.state = "archived"
        elif action == A.REACTIVATED.value:
            m.state = "active"
        elif action in _UNKNOWN_STATE:
            m.state = None
    return out


def check_history(store: MilvusStore, settled: bool = True) -> HistoryReport:
    """Replay the whole collection's history against its rows; the report lists every difference."""
    rows = {int(r["id"]): r for page in store.iterate("", ["id", "user_id", "memory_type", "text", "metadata"]) for r in page}
    events = store.history("")
    report = HistoryReport(memories=len(rows), events=len(events))
    told = replay(events)
    problems = report.problems
    for mid, row in rows.items():
        meta = row.get("metadata") or {}
        m = told.get(mid)
        stored_from = sorted(int(i) for i in meta.get("merged_from_ids") or [])
        if m is None or not m.created:
            problems.append(f"memory {mid} ({row['user_id']}) exists but its history never created it")
        else:
            if not m.exists:
                problems.append(f"memory {mid} ({row['user_id']}) exists but its history removed it: {m.told}")
            if m.text is not None and m.text != row["text"]:
                problems.append(f"memory {mid}: text {row['text']!r}, its history says {m.text!r}")
            state = ((meta.get(LIFE_KEY) or {}).get("state")) if isinstance(meta.get(LIFE_KEY), dict) else None
            if m.state is not None and state is not None and state != m.state:
                problems.append(f"memory {mid}: state {state!r}, its history says {m.state!r}")
            if (m.merged_from or []) != stored_from:
                problems.append(f"memory {mid}: merged_from_ids {stored_from}, its history says {m.merged_from}")
        if stored_from:
            report.merged += 1
            for src in stored_from:
                s = told.get(src)
                if src in rows and not meta.get("merge_pending"):
                    problems.append(f"memory {mid} merged {src}, which is still there")
                if src not in rows and (s is None or s.exists or s.merged_into != mid):
                    problems.append(f"memory {mid} merged {src}, whose history does not say it went into {mid}")
        if settled and meta.get("merge_pending"):
            problems.append(f"memory {mid}: a merge left pending")
    for mid, m in told.items():
        if mid in rows:
            continue
        if m.exists:
            problems.append(f"memory {mid} is gone without a delete, forget or merge in its history ({m.events} events)")
        if m.merged_into is not None and m.merged_into not in rows and told.get(m.merged_into, Replayed(exists=True)).exists:
            problems.append(f"memory {mid} went into {m.merged_into}, which is gone without a history of its removal")
    for key in ("merge_key", "distill_key"):
        seen = Counter((r["user_id"], (r.get("metadata") or {}).get(key)) for r in rows.values() if (r.get("metadata") or {}).get(key))
        problems += [f"{n} live records of {user} share {key} {k}" for (user, k), n in seen.items() if n > 1]
    return report


def check_users(store: MilvusStore, users: Iterable[str], settled: bool = True) -> HistoryReport:
    """The same check for some users only (a shared collection's other tenants left out)."""
    wanted = list(users)
    sub = _Scoped(store, F.in_("user_id", wanted))
    return check_history(sub, settled)  # type: ignore[arg-type]


class _Scoped:
    """A store view whose scans and history see only the rows of a filter."""

    def __init__(self, store: MilvusStore, scope: str):
        self.store, self.scope = store, scope

    def iterate(self, expr: str, fields: list[str]) -> Any:
        return self.store.iterate(F.and_(expr or None, self.scope), fields)

    def history(self, expr: str) -> list[dict[str, Any]]:
        return self.store.history(F.and_(expr or None, self.scope))
