"""Semantic distillation, part of the consolidation job: the SemanticWriter over episodes
not yet distilled, a chunk at a time, with batched neighbour searches and batched writes.

Crash safety: new facts are inserted before their episodes are marked `distilled`; a
re-run after a crash in between extracts again and finds the facts already stored
(same normalised text among the nearest semantic memories), so nothing is stored twice.

Idempotence across replicas: each fact carries `distill_key` (merged_row.distill_key: its source
episode and normalised wording); facts whose key is stored already are not written again, and the
run's fencing check (store/leases.py) comes right before the insert, so a run that lost its lease
writes nothing and two runs (two replicas, a retry) end with one record per fact.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..embeddings import Embedder
from ..errors import LLMError
from ..lifecycle.categories import new_life
from ..models import (
    LIFE_KEY,
    ConsolidationStats,
    HistoryAction,
    HistoryEvent,
    MemoryRecord,
    MemoryType,
    Progress,
    now_ts,
)
from ..processors.semantic_writer import SemanticWriter
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.agents import agent_of, carried, same_agent
from ..store.writes import Writer
from . import rules as R
from .merged_row import distill_key
from .rows import ACTOR, event, fits, ids_by_user

log = logging.getLogger(__name__)
CHUNK = 1024
SEMANTIC = MemoryType.SEMANTIC.value


def not_to_distil(row: dict[str, Any]) -> bool:
    """Facts are built only from what is current (issue 55): never from an episode distilled already, a turn
    still pending its decision or a merge, nor one a correction superseded ("I moved to Rome" replaced "I live
    in Portland": "The user lives in Portland" must not come back). A forgotten memory is out of the store."""
    meta = row.get("metadata") or {}
    if any(meta.get(k) for k in ("distilled", "pending_decision", "merge_pending")):
        return True
    life = meta.get(LIFE_KEY) if isinstance(meta.get(LIFE_KEY), dict) else {}
    return life.get("superseded_by") is not None or life.get("valid_to") is not None or life.get("state") == "forgotten"


class Distiller:
    """The distillation phase of one consolidation run: what it needs is its constructor (the job
    hands over its store, embedder, SemanticWriter, write lock, stats and crash-test checkpoint)."""

    def __init__(self, store: MilvusStore, embedder: Embedder, extractor: SemanticWriter, k_semantic: int,
                 lock: AbstractContextManager[Any], stats: ConsolidationStats, checkpoint: Callable[[str], None],
                 fence: Callable[[], None] | None = None, writes: Writer | None = None):
        self.store, self.embedder, self.extractor, self.k_semantic = store, embedder, extractor, k_semantic
        self.writes = writes or Writer(store, embedder, threading.Lock())  # the one write path (store/writes.py)
        self._lock, self.stats, self.checkpoint = lock, stats, checkpoint
        self.fence: Callable[[], None] = fence or (lambda: None)  # the run's lease check, before writing facts

    def run(self, scope: str, notify: Progress) -> None:
        """SemanticWriter over episodes not yet distilled, a chunk at a time (batched searches and writes)."""
        by_user = ids_by_user(self.store, scope, not_to_distil)
        total, done = sum(len(v) for v in by_user.values()), 0
        for ids in by_user.values():
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start : start + CHUNK]
                self._distill_chunk(self.store.by_ids(chunk, [*MEMORY_FIELDS, "vector"]))
                done += len(chunk)
                notify("semantic", done, total)

    def _distill_chunk(self, rows: list[dict[str, Any]]) -> None:
        existing = self._nearest_facts(rows, max(1, self.k_semantic))
        known: dict[str, set[str]] = {}  # user -> normalised facts seen in this chunk
        done: list[tuple[dict[str, Any], list[str]]] = []
        guard: dict[int, dict[str, Any]] = {}  # episode id -> the fact guard's path and unsupported items
        for row in rows:
            episode = MemoryRecord.from_row(row)
            facts_near = existing[episode.id]
            self.stats.llm_calls += 1
            try:
                extraction = self.extractor.extract(episode, facts_near)
            except LLMError as exc:
                self.stats.errors += 1
                log.warning("semantic extraction for memory %s skipped: %s", episode.id, exc)
                continue
            self.stats.llm_calls += extraction.asked_again  # the fact guard asked once more
            guard[episode.id] = extraction.facts_details()
            seen = known.setdefault(f"{episode.user_id}\n{agent_of(episode.metadata)}", set())  # per user and agent
            seen.update(R.normalise(f) for f in facts_near)
            facts = []
            for item in extraction.facts:
                fact, key = (item.fact or "").strip(), R.normalise(item.fact or "")
                if key and fits(fact) and key not in seen:
                    seen.add(key)
                    facts.append(fact)
            done.append((row, facts))
        new_rows = self._new_facts(done)
        with self._lock:
            if new_rows:
                self.fence()  # LeaseLost: another replica holds this user now; nothing is written
            new_rows = self._not_stored(new_rows)  # by distill_key: written already by another run or a retry
            ids = self.writes.insert_held(new_rows, lambda n, i: [HistoryEvent(
                memory_id=i, user_id=new_rows[n]["user_id"], action=HistoryAction.CREATED, new_text=new_rows[n]["text"], actor=ACTOR,
                details={"distilled_from": new_rows[n]["metadata"]["source_memory_ids"][0]})])
        self.stats.semantic_created += len(ids)
        self.checkpoint("semantic_inserted")
        made: dict[int, list[int]] = {}
        for i, r in zip(ids, new_rows):
            made.setdefault(r["metadata"]["source_memory_ids"][0], []).append(i)
        marks, events, read, now = [], [], [], now_ts()
        for row, _facts in done:
            episode = MemoryRecord.from_row(row)
            sem_ids = made.get(episode.id, [])
            read.append(episode)
            marks.append(episode.model_copy(update={"metadata": {**episode.metadata, "distilled": True, "semantic_ids": sem_ids,
                                                                 "updated_at": now}}).to_row(row["vector"]))
            events.append(event(episode, HistoryAction.DISTILLED, old_text=episode.text, new_text=episode.text,
                                      details={"semantic_ids": sem_ids, **guard.get(episode.id, {})}))
        with self._lock:  # an episode deleted or edited meanwhile keeps its state, with no event (store/writes.py)
            self.writes.rewrite_held(marks, read, events)

    def _nearest_facts(self, rows: list[dict[str, Any]], k: int) -> dict[int, list[str]]:
        """The user's semantic memories nearest to each episode: one batched search per user."""
        out: dict[int, list[str]] = {}
        by_user: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_user.setdefault(row["user_id"], []).append(row)
        for user, group in by_user.items():
            scope = F.and_(F.eq("user_id", user), F.eq("memory_type", SEMANTIC))
            results = self.store.search_dense([r["vector"] for r in group], scope, k, partition=self.store.partition_for(user))
            self.stats.similarity_lookups += len(group)
            for row, hits in zip(group, results):  # only the episode's own agent's facts (store/agents.py)
                mine = [h for h in hits if same_agent(h.get("metadata"), row.get("metadata"))]
                out[int(row["id"])] = [str((h.get("metadata") or {}).get("fact") or h.get("text") or "") for h in mine]
        return out

    def _not_stored(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows whose distill_key no stored fact of their user carries yet."""
        stored: set[tuple[str, str]] = set()
        by_user: dict[str, list[str]] = {}
        for r in rows:
            by_user.setdefault(r["user_id"], []).append(r["metadata"]["distill_key"])
        for user, keys in by_user.items():
            for start in range(0, len(keys), 200):
                part = F.or_(*(F.json_eq("metadata", "distill_key", k) for k in keys[start : start + 200]))
                found = self.store.query(F.and_(F.eq("user_id", user), F.eq("memory_type", SEMANTIC), part), ["metadata"], limit=16384)
                stored |= {(user, str((f.get("metadata") or {}).get("distill_key"))) for f in found}
        return [r for r in rows if (r["user_id"], r["metadata"]["distill_key"]) not in stored]

    def _new_facts(self, done: list[tuple[dict[str, Any], list[str]]]) -> list[dict[str, Any]]:
        """Semantic rows for facts not already stored (checked by a search with each fact's own vector)."""
        flat = [(row, fact) for row, facts in done for fact in facts]
        if not flat:
            return []
        vectors = self.embedder.encode([fact for _row, fact in flat], role="passage")
        by_user: dict[str, list[int]] = {}
        for i, (row, _fact) in enumerate(flat):
            by_user.setdefault(row["user_id"], []).append(i)
        twins: dict[int, list[dict[str, Any]]] = {}
        for user, idx in by_user.items():
            scope = F.and_(F.eq("user_id", user), F.eq("memory_type", SEMANTIC))
            hits_of = self.store.search_dense([vectors[i].tolist() for i in idx], scope, 3, partition=self.store.partition_for(user))
            for i, hits in zip(idx, hits_of):
                twins[i] = hits
            self.stats.similarity_lookups += len(idx)
        out, now = [], now_ts()
        for i, ((row, fact), vector) in enumerate(zip(flat, vectors)):
            if any(R.normalise(str(h.get("text") or "")) == R.normalise(fact) and same_agent(h.get("metadata"), row.get("metadata"))
                   for h in twins[i]):
                continue  # already known (e.g. written before a crash)
            episode = MemoryRecord.from_row(row)
            meta = {"fact": fact, "source_chatid": episode.chat_id, "first_seen": episode.time_iso,
                    "source_memory_ids": [episode.id], "distill_key": distill_key(episode.id, R.normalise(fact)),
                    "created_at": now, "updated_at": now, **carried(episode.metadata),
                    **({R.SOURCE_TURNS: R.turn_ids(episode.metadata)} if R.turn_ids(episode.metadata) else {}),
                    LIFE_KEY: new_life(fact, MemoryType.SEMANTIC, now, episode.ts).stored()}
            fact_record = MemoryRecord(id=0, user_id=episode.user_id, memory_type=MemoryType.SEMANTIC, ts=episode.ts,
                                       chat_id=episode.chat_id, who=episode.who, text=fact, metadata=meta)
            out.append(fact_record.to_row(vector.tolist(), with_id=False))
        return out
