"""Hard rules of consolidation: small pure functions, no store, no model.

Two episodes may only merge when the same person is remembered (`who`), when their events
happened on one day (or one text names the other's day: `different_days`), and when they
are close in time: within 30 minutes in one chat, within 7 days across chats. Similarity only *proposes* a pair; these rules and then the Merger's
same-event judgement decide. Matching words never decide on their own: the same text
told on different days or in different chats is judged like any other pair.

The time policy is the table below: the two merge windows, the words that tie an event
to the day it was told (`DAY_TIED`: "this morning", "昨天"), and what the write path may
take as the same words said again (`said_again`: one chat, within the same-chat window).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from ..models import MemoryRecord
from ..store.agents import same_agent
from ..text.days import event_day, times_allow_one_event

PairClass = Literal["merge_candidate", "separate", "none"]

# ---- the time policy ------------------------------------------------------------------
SAME_CHAT_WINDOW_S = 1800  # Property 18: one chat, at most 30 minutes apart
DIFF_CHAT_WINDOW_S = 604800  # Property 19: different chats, at most 7 days apart
def pair_considered(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether consolidation judges a pair at all (merge or separate): never across agents, nor an
    agent's memory with a shared one (store/agents.py `same_agent`)."""
    return a.user_id == b.user_id and same_agent(a.metadata, b.metadata)


def same_who(who_a: str, who_b: str) -> bool:
    """Property 20: memories about different people never merge."""
    return who_a == who_b


def within_time_window(
    ts_a: int,
    ts_b: int,
    same_chat: bool,
    same_chat_window: int = SAME_CHAT_WINDOW_S,
    diff_chat_window: int = DIFF_CHAT_WINDOW_S,
) -> bool:
    """Properties 18 and 19: |ts_a - ts_b| within the window for this chat relation."""
    window = same_chat_window if same_chat else diff_chat_window
    return abs(int(ts_a) - int(ts_b)) <= window


def merge_allowed(
    a: MemoryRecord,
    b: MemoryRecord,
    same_chat_window: int = SAME_CHAT_WINDOW_S,
    diff_chat_window: int = DIFF_CHAT_WINDOW_S,
) -> tuple[bool, str]:
    """All hard rules for one pair: (allowed, the reason when not)."""
    if a.user_id != b.user_id:
        return False, "different users"
    if not same_agent(a.metadata, b.metadata):
        return False, "different agents (or an agent's and a shared memory)"
    if not same_who(a.who, b.who):
        return False, f"different who ({a.who!r} vs {b.who!r})"
    apart = different_days(a, b)
    if apart:
        return False, apart
    same_chat = a.chat_id == b.chat_id
    if not within_time_window(a.ts, b.ts, same_chat, same_chat_window, diff_chat_window):
        window = same_chat_window if same_chat else diff_chat_window
        where = "same chat" if same_chat else "different chats"
        return False, f"{where}: {abs(a.ts - b.ts)} s apart, more than {window} s"
    return True, ""


def different_days(a: MemoryRecord, b: MemoryRecord) -> str:
    """Why two memories are two events by their days, or "": events on different days never merge unless a
    text names the other's day ("the concert on Monday was great", said on Wednesday of Monday's concert:
    its `named_date` is Monday). Two identical lunch reports five days apart are two lunches."""
    day_a, day_b = event_day(a.metadata.get("time")), event_day(b.metadata.get("time"))
    if not day_a or not day_b or day_a == day_b:
        return ""
    if a.metadata.get("named_date") == day_b or b.metadata.get("named_date") == day_a:
        return ""
    return f"events on different days ({min(day_a, day_b)} and {max(day_a, day_b)}): two events"


def said_again(existing: MemoryRecord, text: str, chat_id: str, who: str, ts: int, time_iso: str) -> bool:
    """The write path's "already remembered": the same words count as one telling said again only
    in the same chat, by the same person, within the same-chat window, on a day the words allow.
    Anything else is stored and goes to consolidation's same-event judgement like any other pair."""
    return (
        normalise(existing.text) == normalise(text)
        and existing.chat_id == chat_id
        and existing.who == who
        and within_time_window(existing.ts, ts, same_chat=True)
        and times_allow_one_event(existing.text, existing.time_iso, text, time_iso)[0]
    )


def classify(similarity: float, thresholds: tuple[float, float]) -> PairClass:
    """(low, high) thresholds: >= high proposes a merge, [low, high) a separation, below: nothing."""
    low, high = thresholds
    if similarity >= high:
        return "merge_candidate"
    if similarity >= low:
        return "separate"
    return "none"


def pair_key(id_a: int, id_b: int) -> tuple[int, int]:
    """An unordered pair, so each pair is considered once per run."""
    return (id_a, id_b) if id_a <= id_b else (id_b, id_a)


def parse_time(value: Any, fallback_ts: int) -> datetime:
    """metadata.time as an aware datetime; the record's ts when it is missing or unreadable."""
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    return datetime.fromtimestamp(int(fallback_ts), tz=timezone.utc)


def earlier_of(a: MemoryRecord, b: MemoryRecord) -> MemoryRecord:
    """Property 21: the record whose metadata.time is earlier (ties: lower ts, then lower id)."""
    ka = (parse_time(a.metadata.get("time"), a.ts), a.ts, a.id)
    kb = (parse_time(b.metadata.get("time"), b.ts), b.ts, b.id)
    return a if ka <= kb else b


def source_chat_ids(record: MemoryRecord) -> list[str]:
    """The chats a record came from: its merge sources, or just its own chat."""
    found = record.metadata.get("source_chat_ids")
    chats = [str(c) for c in found] if isinstance(found, list) and found else []
    if record.chat_id not in chats:
        chats.insert(0, record.chat_id)
    return chats


TURN_KEY = "turn_id"  # the caller's id of the turn a memory was said in (any string; docs/concepts.md)
SOURCE_TURNS = "source_turns"  # every turn a derived memory (a distilled fact, a merge) came from


def turn_ids(metadata: Mapping[str, Any]) -> list[str]:
    """The turns a memory came from: its own `turn_id` and the `source_turns` it carries, in order, once."""
    own = metadata.get(TURN_KEY)
    found = [str(own)] if isinstance(own, (str, int)) and not isinstance(own, bool) else []
    carried = metadata.get(SOURCE_TURNS)
    return dedupe(found + [str(t) for t in carried if isinstance(t, (str, int))] if isinstance(carried, list) else found)


def already_separated(a: Mapping[str, Any], b: Mapping[str, Any], id_a: int, id_b: int) -> bool:
    """True when both records already carry each other in metadata.separated_from."""
    sa = a.get("separated_from") or []
    sb = b.get("separated_from") or []
    return id_b in sa and id_a in sb


def dedupe(items: list[Any]) -> list[Any]:
    """Order-preserving de-duplication."""
    seen: set[Any] = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def normalise(text: str) -> str:
    """NFKC, lower case, no punctuation, single spaces: for duplicate checks only."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    return " ".join("".join(ch if ch.isalnum() or ch.isspace() else " " for ch in text).split())


def dedupe_join(*parts: Any, sep: str = "; ") -> str:
    """Join non-empty strings, dropping any that another part already contains."""
    kept: list[str] = []
    for part in parts:
        p = str(part or "").strip()
        if not p or any(normalise(p) in normalise(k) for k in kept):
            continue
        kept = [k for k in kept if normalise(k) not in normalise(p)]
        kept.append(p)
    return sep.join(kept)
