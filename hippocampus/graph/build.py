"""Build the graph from memories: the consolidation phase that reads each memory once with the
TripleExtractor (batched, never on the add path) and writes its entities and triples into
`<name>_graph` (store/graph.py), each supported by the memories that name or state it.

The ledger (rows of kind `memory`) says which memory was read and a hash of the text read: a memory
is read again only when its text changed (an update, a reconsolidation), and then its old supports
are dropped first. A model failure leaves that batch unread (counted in `errors`, read next run);
nothing half-written: a batch's rows are written after its extraction succeeded.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

from ..contract.replies import GraphStats
from ..embeddings import Embedder
from ..errors import LLMError
from ..models import MemoryRecord, MemoryType, Progress, now_ts
from ..processors.results import GraphEntity, GraphTriple
from ..processors.triple_extractor import BATCH, TripleExtractor
from ..store import MEMORY_FIELDS, MilvusStore
from ..store import filters as F
from ..store.graph import NAME_BYTES, PART_BYTES, blank_row, clip, row_key

KINDS_READ = (MemoryType.EPISODIC.value, MemoryType.SEMANTIC.value)  # procedures are steps, not facts about the world


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def triple_sentence(t: GraphTriple) -> str:
    """A triple as the sentence its vector embeds ("Caroline went to LGBTQ support group", "alice not likes 香菜")."""
    words = [t.subject, ("not " if t.negated else "") + t.predicate, t.object]
    return " ".join(w for w in words if w) + (f" ({t.frequency})" if t.frequency else "") + (f" if {t.condition}" if t.condition else "")


def to_read(store: MilvusStore, user_id: str) -> tuple[list[MemoryRecord], dict[int, str]]:
    """(the memories of `user_id` the extractor has not read in their current wording, the ledger id -> hash)."""
    ledger = {int(r["supports"][0]): r["name"] for r in store.graph.rows(user_id, "memory", fields=["name", "supports"]) if r["supports"]}
    scope = F.and_(F.eq("user_id", user_id), F.in_("memory_type", KINDS_READ))
    todo = []
    for page in store.iterate(scope, MEMORY_FIELDS):
        for row in page:
            record = MemoryRecord.from_row(row)
            if record.metadata.get("pending_decision"):
                continue  # not decided yet: it may never be kept
            if ledger.get(record.id) != text_hash(record.text):
                todo.append(record)
    todo.sort(key=lambda r: (r.ts, r.id))
    return todo, ledger


def build(store: MilvusStore, embedder: Embedder, extractor: TripleExtractor, user_id: str | None = None,
          progress: Progress | None = None) -> GraphStats:
    """Read every memory not read yet (of `user_id`, or of every user) and write what it names."""
    started = time.perf_counter()
    stats = GraphStats()
    notify = progress or (lambda phase, done, total: None)
    users = [user_id] if user_id is not None else sorted(_users(store))
    for user in users:
        todo, ledger = to_read(store, user)
        if not todo:
            continue
        stats.users += 1
        stale = {r.id: user for r in todo if r.id in ledger}
        if stale:
            store.graph.drop_supports(stale)  # a changed text: what the old wording said goes first
        for start in range(0, len(todo), BATCH):
            batch = todo[start:start + BATCH]
            stats.llm_calls += 1
            try:
                graphs = extractor.extract(batch)
            except LLMError:
                stats.errors += 1
                continue
            _write(store, embedder, user, batch, graphs, stats)
            alive = {int(r["id"]) for r in store.by_ids([r.id for r in batch], ["id"])}
            store.graph.drop_supports({r.id: user for r in batch if r.id not in alive})  # deleted meanwhile
            stats.memories_read += len(batch)
            notify("graph", min(start + len(batch), len(todo)), len(todo))
    stats.seconds = round(time.perf_counter() - started, 3)
    return stats


def _users(store: MilvusStore) -> set[str]:
    users: set[str] = set()
    for page in store.iterate(F.in_("memory_type", KINDS_READ), ["id", "user_id"]):
        users.update(r["user_id"] for r in page)
    return users


def _write(store: MilvusStore, embedder: Embedder, user: str, batch: Sequence[MemoryRecord], graphs: Sequence[Any],
           stats: GraphStats) -> None:
    """Merge one batch's entities and triples into the user's rows (a new support on an existing row,
    a new row embedded), then the ledger rows of the batch."""
    dim = store.dim
    wanted: dict[str, dict[str, Any]] = {}
    for record, graph in zip(batch, graphs):
        for entity in graph.entities:
            _support(wanted, _entity_row(user, entity, dim), record)
        for triple in graph.triples:
            _support(wanted, _triple_row(user, triple, dim), record)
    with store.graph.lock:  # no delete may drop a support between reading the rows and writing them back
        existing = store.graph.by_keys(list(wanted), fields=["key", "supports", "first_seen", "last_seen", "vector"])
        texts = {k: row["name"] if row["kind"] == "entity" else row["_sentence"] for k, row in wanted.items() if k not in existing}
        vectors = {k: row["vector"] for k, row in existing.items()}  # a known row keeps its vector: only new names are embedded
        if texts:
            vectors.update(zip(texts, embedder.encode(list(texts.values()), role="passage")))
        store.graph.write(_merged(user, batch, wanted, existing, vectors, dim, stats))


def _merged(user: str, batch: Sequence[MemoryRecord], wanted: dict[str, dict[str, Any]], existing: dict[str, dict[str, Any]],
            vectors: dict[str, Any], dim: int, stats: GraphStats) -> list[dict[str, Any]]:
    """The rows to write: each wanted row with the supports it had, then the batch's ledger rows."""
    now = now_ts()
    rows = []
    for key, row in wanted.items():
        old = existing.get(key)
        row["vector"] = [float(x) for x in vectors[key]]
        if old is not None:
            row["supports"] = sorted({int(s) for s in old["supports"]} | set(row["supports"]))
            row["first_seen"] = min(int(old["first_seen"]) or row["first_seen"], row["first_seen"])
            row["last_seen"] = max(int(old["last_seen"]), row["last_seen"])
        row["updated_at"] = now
        row.pop("_sentence", None)
        rows.append(row)
        stats.entities += row["kind"] == "entity"
        stats.triples += row["kind"] == "triple"
    for record in batch:
        ledger = blank_row(user, "memory", row_key(user, "memory", str(record.id)), dim)
        ledger.update(name=text_hash(record.text), supports=[record.id], first_seen=record.ts, last_seen=record.ts, updated_at=now)
        rows.append(ledger)
    return rows


def _support(wanted: dict[str, dict[str, Any]], row: dict[str, Any], record: MemoryRecord) -> None:
    """Add `record` as a support of `row` (the same row met twice in a batch is one row)."""
    row = wanted.setdefault(row["key"], row)
    if record.id not in row["supports"]:
        row["supports"].append(record.id)
    row["first_seen"] = min(row["first_seen"] or record.ts, record.ts)
    row["last_seen"] = max(row["last_seen"], record.ts)


def _entity_row(user: str, entity: GraphEntity, dim: int) -> dict[str, Any]:
    row = blank_row(user, "entity", row_key(user, "entity", entity.name), dim)
    row.update(name=clip(entity.name, NAME_BYTES), etype=clip(entity.type, 32))
    return row


def _triple_row(user: str, t: GraphTriple, dim: int) -> dict[str, Any]:
    key = row_key(user, "triple", t.subject, t.predicate, t.object, "not" if t.negated else "", t.condition)
    row = blank_row(user, "triple", key, dim)
    row.update(name=clip(triple_sentence(t), NAME_BYTES), subject=clip(t.subject, PART_BYTES), predicate=clip(t.predicate, PART_BYTES),
               object=clip(t.object, PART_BYTES), negated=bool(t.negated), frequency=clip(t.frequency, 64),
               condition=clip(t.condition, PART_BYTES), _sentence=triple_sentence(t))
    return row
