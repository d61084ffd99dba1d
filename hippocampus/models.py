"""Records at the edges of the library: what callers get back and what the store holds."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

TEXT_MAX_BYTES = 65535  # the longest memory text, in UTF-8 bytes: Milvus's VARCHAR limit for the text field


class MemoryType(str, Enum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class HistoryAction(str, Enum):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"
    MERGED = "merged"
    SEPARATED = "separated"
    RECONSOLIDATED = "reconsolidated"
    DISTILLED = "distilled"
    HIT = "hit"


def now_ts() -> int:
    return int(datetime.now(timezone.utc).timestamp())


def ts_to_iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


class MemoryRecord(BaseModel):
    """One memory, episodic or semantic, as stored in the single collection.

    `ts` is when the remembered event happened (seconds since the epoch, UTC);
    `metadata.time` keeps it as ISO 8601 for prompts and people. `created_at` and
    `updated_at` are when this record was written and last changed.
    """

    model_config = ConfigDict(extra="allow")

    id: int
    user_id: str
    memory_type: MemoryType
    ts: int
    chat_id: str
    who: str
    text: str
    hit_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: int | None = None
    updated_at: int | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "MemoryRecord":
        """Build from a Milvus row; vectors and search scores are dropped."""
        data = {k: v for k, v in row.items() if k not in ("vector", "sparse", "_distance")}
        data["metadata"] = dict(data.get("metadata") or {})
        data.setdefault("created_at", data["metadata"].get("created_at"))
        data.setdefault("updated_at", data["metadata"].get("updated_at"))
        return cls.model_validate(data)

    @property
    def time_iso(self) -> str:
        return str(self.metadata.get("time") or ts_to_iso(self.ts))


class SearchHit(BaseModel):
    """A recalled memory and why it ranked where it did."""

    memory: MemoryRecord
    score: float = Field(description="final ranking score (higher is better)")
    similarity: float | None = Field(default=None, description="cosine similarity to the query, if dense search ran")

    @property
    def id(self) -> int:
        return self.memory.id

    @property
    def text(self) -> str:
        return self.memory.text


class SearchResult(BaseModel):
    """Episodic and semantic hits, each list ranked best first."""

    episodic: list[SearchHit] = Field(default_factory=list)
    semantic: list[SearchHit] = Field(default_factory=list)

    @property
    def all(self) -> list[SearchHit]:
        """Both lists in one, each keeping its own order. Where the two meet, the cosine decides:
        episodic scores carry context bonuses that semantic scores cannot have, so scores are
        comparable only within a kind (by score where no cosine exists, as in BM25-only search)."""
        def key(h: SearchHit) -> float:
            return h.similarity if h.similarity is not None else h.score

        out, e, s = [], 0, 0
        while e < len(self.episodic) or s < len(self.semantic):
            take_e = s >= len(self.semantic) or (e < len(self.episodic) and key(self.episodic[e]) >= key(self.semantic[s]))
            if take_e:
                out.append(self.episodic[e])
                e += 1
            else:
                out.append(self.semantic[s])
                s += 1
        return out

    def __len__(self) -> int:
        return len(self.episodic) + len(self.semantic)


class HistoryEvent(BaseModel):
    """One change to one memory; kept after the memory itself is gone."""

    memory_id: int
    user_id: str
    action: HistoryAction
    old_text: str | None = None
    new_text: str | None = None
    actor: str = "api"
    at: int = Field(default_factory=now_ts)
    details: dict[str, Any] = Field(default_factory=dict)


class AddResult(BaseModel):
    """What `Memory.add` did with a turn."""

    ids: list[int] = Field(default_factory=list)
    stored: bool = False
    reason: str = ""
    pending_decision: bool = False


class MemoryPage(BaseModel):
    """One page of a user's memories, oldest event first; `next_offset` is None on the last page."""

    items: list[MemoryRecord] = Field(default_factory=list)
    total: int = 0
    offset: int = 0
    next_offset: int | None = None


class ConsolidationStats(BaseModel):
    examined: int = 0
    merged: int = 0
    separated: int = 0
    semantic_created: int = 0
    pending_decided: int = 0
    llm_calls: int = 0
    similarity_lookups: int = 0
    errors: int = 0
    seconds: float = 0.0
