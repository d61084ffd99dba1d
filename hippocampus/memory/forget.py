"""What the user says about their memory is honoured on every path (issue 31 item 13): a forget request
said in a turn ("Please forget that I like jazz", "忘掉我喜欢爵士乐") is never stored, and the memories it
names leave search and the prompt block at once, kept whole in a "forgotten" history event (restorable,
like observe's deletions). add(infer=True) and observe both call `forget_named`, so the two agree.

A request may name its memory by reference (issue 55): "昨天说的网贷那件事你忘了吧，别记着", "the thing about
my loan I told you yesterday, forget it" (text/references.py): the reference is part of the request (never
stored), its words pick the memories and its time words ("yesterday", "上周") pick among them (`in_window`).

The offline rule is deliberately narrow (text.names_memory): a memory is named when it holds most of the
words the request names, so "forget that I like jazz" takes "I like jazz" and "The user likes jazz" but
not "I like cats".
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..lifecycle.decay import forgotten_row
from ..lifecycle.policy import PERMANENT
from ..models import HistoryAction, HistoryEvent, MemoryRecord, MemoryType, ObserveResult
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.removal import remove_with_history
from ..store.writes import revised_row
from ..text import (
    clauses,
    forget_clauses,
    forget_terms,
    has_cjk,
    is_chitchat,
    is_question,
    names_memory,
    names_taken_back,
    substantial,
    taken_back,
)
from ..text.references import said_window
from ..text.slots import corrected as slot_pairs
from ..text.slots import of_record, past_move, rest_of
from ..text.slots import read as read_slots

if TYPE_CHECKING:
    from ..context import MemoryContext

ACTOR = "knowledge_monitor"  # observe's actor (the monitor); add(infer=True) writes as the write decider
CANDIDATES = 20  # memories searched per forget request; the rule then keeps only those it names
# A new value of a single-valued slot supersedes the old one at once only when the clause says it
# changed ("I moved to Rome", "我搬到了上海", "I started a new job", "I turned 30"): "we stayed near
# Gion" on a trip names a place too, and is no move (the demo's Kyoto turn). Other slot differences
# wait for the consolidation's contradiction judge.
CHANGE = re.compile(r"\b(moved|relocated|now (live|work)|live now|new job|started (a |my )?(new )?(job|position|role)|"
                    r"changed (my )?(job|name)|renamed|turned \d+|quit)\b|搬到|搬去|搬家|搬回|现在住|如今住|换了工作|换工作|"
                    r"跳槽|入职|改名|今年\d+岁|已经\d+岁", re.IGNORECASE)


def _soft_delete(store: MilvusStore, lock: threading.Lock, record: MemoryRecord, reason: str, out: ObserveResult,
                 actor: str = ACTOR) -> bool:
    """Remove the row, keeping all of it in a "forgotten" event (restorable); never a core memory."""
    scope = F.and_(F.eq("id", record.id), F.eq("user_id", record.user_id))
    with lock:
        rows = store.query(scope, MEMORY_FIELDS, limit=1)
        if not rows:
            out.refused.append(f"memory {record.id} was deleted meanwhile")
            return False
        rec = MemoryRecord.from_row(rows[0])
        if rec.life.category in PERMANENT:
            out.refused.append(f"memory {record.id} is {rec.life.category.value} now; not deleted")
            return False
        event = HistoryEvent(memory_id=rec.id, user_id=rec.user_id, action=HistoryAction.FORGOTTEN, old_text=rec.text,
                             actor=actor, details={"by": actor, "reason": reason, "row": forgotten_row(rec)})
        remove_with_history(store, [event.model_dump(mode="json")], scope, [rec.id])  # the event first (removal.py)
    return True


def forget_asks(text: str) -> list[str]:
    """The clauses of `text` that ask to forget something (none: not a forget request)."""
    return forget_clauses(text)[0]


def forget_split(said: str) -> tuple[list[str], str]:
    """(the clauses that ask to forget something, what else was said, chit-chat left out): the request
    itself is never stored, the rest is decided as any turn."""
    asks, others = forget_clauses(said)
    return asks, " ".join(c for c in others if not is_chitchat(c)).strip()


def correction_of(said: str) -> tuple[list[str], dict[str, str]]:
    """(the clauses that take an earlier statement back, the single-valued slots a clause says changed:
    {"home": "Rome"}); both empty when `said` corrects nothing."""
    from ..llm.rules.lifecycle import slots

    takes_back = taken_back(said)
    new_slots: dict[str, str] = {}
    for clause in clauses(said):
        if clause not in takes_back and CHANGE.search(clause) and not past_move(clause):  # not "moved to NYC at 22"
            new_slots.update({k: v for k, v in slots(clause).items() if k not in new_slots})
    return takes_back, new_slots


def is_correction(said: str) -> bool:
    """Whether the turn corrects something the user said before ("I no longer work at Contoso", "我搬到了罗马")
    or states a slot that a later turn may correct ("I'm 34", text/slots.py): such a turn is always stored, so
    that the new state is never lost with the old one."""
    takes_back, new_slots = correction_of(said)
    return bool(takes_back or new_slots or read_slots(said))


def untouched_rest(text: str, takes_back: list[str], new_slots: dict[str, str]) -> str:
    """What a corrected memory says beyond the corrected slot ("My name is Li Wei and I work at Contoso",
    corrected by "I no longer work at Contoso": "My name is Li Wei"), or "" when the correction touches all
    of it, or none of its clauses alone (then the memory is superseded whole)."""
    from ..llm.rules.lifecycle import slots

    parts = clauses(text)

    def touched(clause: str) -> bool:
        old = slots(clause)
        return any(names_taken_back(clause, c) for c in takes_back) or any(k in old and old[k] != v for k, v in new_slots.items())

    hit = [c for c in parts if touched(c)]
    rest = [c for c in parts if c not in hit and not is_chitchat(c) and not is_question(c) and substantial(c)]
    if not hit or not rest:
        return ""
    return ("，" if has_cjk(text) else ", ").join(rest)


def says_to_memory(said: str) -> bool:
    """Whether a turn asks something of the memory itself: to forget, or a correction of what it holds."""
    takes_back, new_slots = correction_of(said)
    return bool(forget_asks(said) or takes_back or new_slots or any(s.old for s in read_slots(said)))


class Honour:
    """Forget requests and corrections honoured for one Memory, by `actor`: the one implementation that
    add(infer=True), observe, a session's extraction (through add(infer=True)) and the deferred decision
    (handed to the consolidation job by name) all call."""

    def __init__(self, ctx: MemoryContext, search: Callable[..., object], actor: str):
        self.ctx, self.search, self.actor = ctx, search, actor

    split = staticmethod(forget_split)
    is_correction = staticmethod(is_correction)

    def forget(self, user_id: str, asks: list[str], skip: set[int] | frozenset[int] = frozenset()) -> list[int]:
        """The ids of the memories the request names, soft-deleted (restorable)."""
        return forget_named(self.ctx, self.search, user_id, asks, self.actor, skip=skip).deleted

    def correct(self, user_id: str, said: str, new_ids: list[int], at: int) -> list[int]:
        """The ids the correction superseded (or forgot, without a new memory), at once."""
        return supersede_corrected(self.ctx, self.search, user_id, said, new_ids, at, self.actor)


def forget_named(ctx: MemoryContext, search: Callable[..., object], user_id: str, asks: list[str], actor: str,
                 skip: set[int] | frozenset[int] = frozenset()) -> ObserveResult:
    """Soft-delete this user's episodic and semantic memories that the forget request names (never a core
    or system one); `search` is RecordService.find. The result lists the deleted ids and any refusal."""
    out = ObserveResult()
    terms = forget_terms(asks)
    if not terms:
        return out
    found = search(" ".join(sorted(terms)) + " " + " ".join(asks), user_id, limit=CANDIDATES,
                   memory_types=[MemoryType.EPISODIC, MemoryType.SEMANTIC])
    records = [h.memory for h in [*getattr(found, "episodic", []), *getattr(found, "semantic", [])]]
    reason = "the user asked to forget it: " + " / ".join(a.strip() for a in asks)
    named = in_window([r for r in records if r.id not in skip and names_memory(r.text, asks)], asks, ctx, user_id)
    for record in named:
        mid = record.id
        if mid in out.deleted:
            continue
        rows = ctx.store.by_ids([mid], MEMORY_FIELDS, where=F.eq("user_id", user_id))
        if rows and _soft_delete(ctx.store, ctx.write_lock, MemoryRecord.from_row(rows[0]), reason, out, actor=actor):
            out.deleted.append(mid)
    return out


def in_window(records: list[MemoryRecord], asks: list[str], ctx: MemoryContext, user_id: str) -> list[MemoryRecord]:
    """Of the memories a request names, those said when it says ("昨天说的…", "what I told you last week": that
    window of days in the user's zone, text/references.py); all of them when it names no time or none was said
    then (the user's "yesterday" may be off by a day, and the words still name the thing)."""
    from datetime import datetime

    from ..lifecycle.when import said_ts_of, user_zone

    tz = user_zone(ctx.config, user_id)
    window = said_window(asks, datetime.now(tz), tz)
    if window is None:
        return records
    then = [r for r in records if window[0] <= said_ts_of(r.metadata, r.ts) < window[1]]
    return then or records


def corrected(memory: MemoryRecord, takes_back: list[str], new_slots: dict[str, str]) -> str:
    """Why this memory of the user himself is no longer true, or "": a clause takes it back ("I don't live
    in Paris anymore" / "其实我不吃辣了"), or a new statement gives one of its single-valued slots (home, work,
    age, name) another value ("I moved to Rome"); the offline contradiction rules, applied at once."""
    from ..llm.rules.lifecycle import _SUBJECT_EN, _SUBJECT_ZH, slots

    text = memory.text
    if not (_SUBJECT_EN.search(text) or _SUBJECT_ZH.search(text)):
        return ""  # "My sister lives in Paris" is not the user's home
    back = next((c for c in takes_back if names_taken_back(text, c)), "")
    if back:
        return f"the user took it back: {back.strip()}"
    old = slots(text)
    changed = [s for s in new_slots if s in old and old[s] != new_slots[s]]
    return f"{changed[0]}: {old[changed[0]]} -> {new_slots[changed[0]]}" if changed else ""


def supersede_corrected(ctx: MemoryContext, search: Callable[..., object], user_id: str, said: str, new_ids: list[int],
                        at: int, actor: str) -> list[int]:
    """A correction said in a turn supersedes what it corrects at once (not only at the next consolidation):
    the old memory gets valid_to and superseded_by (the memory this turn stored), its score halved, a
    "superseded" history event, and it leaves the prompt block and default search. Two readings find what is
    corrected: by slot (text/slots.py: the same subject and attribute with another value, or the old value
    taken back, in any wording or language: "not Nanjing anymore" supersedes "我们家在南京鼓楼区"), and the older
    word rules (a clause taking a statement back word for word). Only the slot that changed goes: what else
    the old memory said ("My name is Li Wei" beside the old employer, "my dog Biscuit" beside the old home)
    is kept as a memory of its own (`split_from`). Without a new memory nothing is touched: a correction never
    erases a fact and stores nothing (the callers store the turn first). The ids superseded."""
    from ..lifecycle.policy import decay_table, superseded
    from ..models import LIFE_KEY, HistoryAction, HistoryEvent, now_ts

    takes_back, new_slots = correction_of(said)
    stated = read_slots(said)
    if new_ids and ctx.config.llm_provider != "offline":  # a model may have given the new memory's slots (online.py)
        rows = ctx.store.by_ids(new_ids[:1], MEMORY_FIELDS, where=F.eq("user_id", user_id))
        keys = {s.key for s in stated}
        stated += [s for s in (of_record(MemoryRecord.from_row(rows[0]).metadata, rows[0]["text"]) if rows else []) if s.key not in keys]
    if not takes_back and not new_slots and not stated or not new_ids:
        return []
    found = search(said, user_id, limit=CANDIDATES, memory_types=[MemoryType.EPISODIC, MemoryType.SEMANTIC])
    records = [h.memory for h in [*getattr(found, "episodic", []), *getattr(found, "semantic", [])] if h.memory.id not in new_ids]
    table, now, done, by = decay_table(ctx.config.decay_preset, ctx.config.categories), now_ts(), [], new_ids[0]
    for record in records:
        if record.life.superseded_by is not None or record.life.category.value in ("core", "system"):
            continue
        pairs = slot_pairs(of_record(record.metadata, record.text), stated)
        why = "; ".join(f"{o.subject}'s {o.attribute}: {o.value} -> {n.value or '(taken back)'}" for o, n in pairs)
        why = why or corrected(record, takes_back, new_slots)
        if not why:
            continue
        rest = rest_of(record.text, {o.key for o, _ in pairs}) if pairs else untouched_rest(record.text, takes_back, new_slots)
        if rest:
            _keep_rest(ctx, record, rest, actor)
        scope = F.and_(F.eq("id", record.id), F.eq("user_id", user_id))
        with ctx.write_lock:
            rows = ctx.store.query(scope, [*MEMORY_FIELDS, "vector"], limit=1)
            if not rows:
                continue
            old = MemoryRecord.from_row(rows[0])
            if old.life.category.value in ("core", "system"):
                continue
            meta = {**old.metadata, LIFE_KEY: superseded(old.life, by, at, now, table).stored()}
            slots = [{"subject": o.subject, "attribute": o.attribute, "old": o.value, "new": n.value} for o, n in pairs]
            event = HistoryEvent(memory_id=old.id, user_id=user_id, action=HistoryAction.SUPERSEDED, old_text=old.text, actor=actor,
                                 at=now, details={"superseded_by": by, "reason": f"corrected in a turn ({why})",
                                                  **({"slots": slots} if slots else {})})
            ctx.store.add_history([event.model_dump(mode="json")])
            ctx.store.upsert([revised_row(rows[0], metadata=meta)])
        done.append(record.id)
    return done


def _keep_rest(ctx: MemoryContext, old: MemoryRecord, rest: str, actor: str) -> int:
    """A new memory of what a corrected memory said beyond the corrected slot: said when the old one was,
    carrying its caller metadata (the turn keys among them) and `split_from`."""
    from ..lifecycle.rows import new_row
    from ..models import LIFE_KEY

    key = "fact" if old.memory_type is MemoryType.SEMANTIC else "thing"
    owned = {LIFE_KEY, "created_at", "updated_at", "thing", "fact", "source_text", "said_at", "named_date", "split_from", "statements"}
    meta = {**{k: v for k, v in old.metadata.items() if k not in owned}, key: rest, "split_from": old.id}
    row = new_row(old.user_id, old.memory_type, old.ts, old.chat_id, old.who, rest, meta, declared=ctx.config.categories)
    return ctx.writer.insert([row], actor=actor, details={"reason": f"kept from memory {old.id} when a correction superseded it",
                                                          "split_from": old.id})[0]
