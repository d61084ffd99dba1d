"""The kinds a memory and its events are sorted by: the memory's type, its state in the lifecycle and
the actions its history records. Plain enums: every other model and every face spells them so."""

from __future__ import annotations

from enum import Enum


class MemoryType(str, Enum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"  # a tool-call sequence that worked (task, steps, outcome): recalled only when asked for


class HistoryAction(str, Enum):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"
    MERGED = "merged"
    SEPARATED = "separated"
    RECONSOLIDATED = "reconsolidated"
    DISTILLED = "distilled"
    HIT = "hit"
    ARCHIVED = "archived"
    PROMOTED = "promoted"
    REVIEWED = "reviewed"
    SUPERSEDED = "superseded"
    REACTIVATED = "reactivated"
    FORGOTTEN = "forgotten"
    RESTORED = "restored"
    DECAY_RUN = "decay_run"  # a full decay pass over every user (no memory: memory_id 0, user_id "")
    GRAPH_PRUNED = "graph_pruned"  # graph rows (store/graph.py) deleted with this memory: it was their last support
    COMPRESSED = "compressed"  # a fact folded into a compression's output (lifecycle/compress.py), kept archived


class State(str, Enum):
    ACTIVE = "active"
    ARCHIVED = "archived"  # decayed below the archive threshold, or an expired todo: not injected, still searchable
    FORGOTTEN = "forgotten"  # deleted by decay; its history event keeps the row, so `restore` brings it back
