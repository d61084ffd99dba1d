"""The browse service, what a person inspecting an agent's memory needs (the Web UI, and any admin
script): a filtered, sorted page of one user's memories, an overview with the counts a dashboard
draws (the batch delete is memory/batch.py's delete_many). The facade delegates these verbs here;
one user's memories are read a page at a time from the store and only the asked page is returned."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import Field

from .. import validation as V
from ..context import MemoryContext
from ..contract.requests import BrowseRequest, build
from ..errors import InvalidInput
from ..lifecycle.categories import category_names
from ..lifecycle.policy import decay_table, score_of
from ..models import Category, HistoryEvent, MemoryPage, MemoryRecord, now_ts
from ..models.base import Model
from ..store import MEMORY_FIELDS
from ..store import filters as F
from ..transfer import memory_md
from ..transfer.jsonl import dump_line

SORT_KEYS: tuple[str, ...] = ("time", "score", "hits", "id", "category")
HISTOGRAM_BINS = 10
_IDS = re.compile(r"[\s,;，；]+")


class Overview(Model):
    """One user's memories counted the ways a dashboard draws them."""

    total: int = 0
    by_type: dict[str, int] = Field(default_factory=dict)
    by_category: dict[str, int] = Field(default_factory=dict)
    by_state: dict[str, int] = Field(default_factory=dict)
    superseded: int = 0
    score_histogram: list[int] = Field(default_factory=lambda: [0] * HISTOGRAM_BINS)  # [0, 0.1), ..., [0.9, 1.0]
    added_per_day: dict[str, int] = Field(default_factory=dict)  # "2026-11-25" -> memories written that day (UTC)


def parse_ids(text: str) -> list[int]:
    """Memory ids from what a person pastes: commas, semicolons, spaces or newlines between them.
    Raises InvalidInput naming the first thing that is not an id."""
    ids = []
    for part in _IDS.split(str(text or "").strip()):
        if part:
            ids.append(V.check_memory_id(part))
    return list(dict.fromkeys(ids))


def score_now(record: MemoryRecord, now: int, table: dict[Category, Any]) -> float:
    return round(score_of(record.life, now, table), 4)


class BrowseService:
    """The browse verbs over a MemoryContext (its retriever's `caller_filter` compiles and checks `filters`)."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def _scan(self, user_id: str, memory_type: Any = None, chat_id: str | None = None, where: str = "") -> Iterable[MemoryRecord]:
        mtype = V.check_memory_type(memory_type)
        scope = F.and_(F.eq("user_id", user_id), F.eq("memory_type", mtype.value) if mtype else None,
                       F.eq("chat_id", chat_id) if chat_id else None, where)
        for page in self.ctx.store.iterate(scope, MEMORY_FIELDS):
            for row in page:
                yield MemoryRecord.from_row(row)

    def score_now(self, record: MemoryRecord, now: int | None = None) -> float:
        """A memory's score at `now` (default: the clock). Memory.score_now documents the arguments."""
        return score_now(record, now_ts() if now is None else now, decay_table(self.ctx.config.decay_preset, self.ctx.config.categories))

    def browse(self, req: BrowseRequest) -> MemoryPage:
        """A page of one user's memories matching every filter given. BrowseRequest (contract/requests.py)
        documents the fields and errors."""
        memory_type, category, state, chat_id, text, sort = req.memory_type, req.category, req.state, req.chat_id, req.text, req.sort
        filters, offset, limit, descending = req.filters, req.offset, req.limit, req.descending
        user_id = V.check_id("user_id", req.user_id)
        where = self.ctx.retriever.caller_filter(user_id, V.check_metadata(filters, "filters")).expr if filters else ""
        offset, limit = V.check_offset(offset), V.check_limit(limit)
        chat_id = V.check_id("chat_id", chat_id) if chat_id else None
        known = category_names(self.ctx.config.categories)  # built-in and the project's own
        if category and category not in known:
            raise InvalidInput(f"unknown category {category!r}; use one of {known}")
        if state and state not in ("active", "archived", "superseded"):
            raise InvalidInput(f"unknown state {state!r}; use active, archived or superseded")
        if sort not in SORT_KEYS:
            raise InvalidInput(f"unknown sort {sort!r}; use one of {list(SORT_KEYS)}")
        needle = str(text).casefold().strip() if text else ""
        now, table = now_ts(), decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        rows: list[tuple[Any, MemoryRecord]] = []
        for rec in self._scan(user_id, memory_type, chat_id, where):
            life = rec.life
            if category and life.category.value != category:
                continue
            if state == "superseded" and life.superseded_by is None:
                continue
            if state in ("active", "archived") and (life.state.value != state or life.superseded_by is not None):
                continue
            if needle and needle not in rec.text.casefold():
                continue
            key = {"time": rec.ts, "score": score_now(rec, now, table), "hits": rec.hit_count, "id": rec.id,
                   "category": life.category.value}[sort]
            rows.append(((key, rec.id), rec))
        rows.sort(key=lambda kv: kv[0], reverse=descending)
        end = offset + limit
        return MemoryPage(items=[r for _, r in rows[offset:end]], total=len(rows), offset=offset,
                          next_offset=end if end < len(rows) else None)

    def overview(self, user_id: str) -> Overview:
        """Counts by type, category and state, the score histogram and memories written per day.
        Memory.overview documents the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        now, table = now_ts(), decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        out = Overview()
        types: Counter[str] = Counter()
        cats: Counter[str] = Counter()
        states: Counter[str] = Counter()
        days: Counter[str] = Counter()
        for rec in self._scan(user_id):
            life = rec.life
            out.total += 1
            types[rec.memory_type.value] += 1
            cats[life.category.value] += 1
            if life.superseded_by is not None:  # superseded, whatever its state: counted there alone, as browse's
                out.superseded += 1            # `state` filter does, so by_state and superseded sum to total
            else:
                states[life.state.value] += 1
            out.score_histogram[min(int(score_now(rec, now, table) * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
            written = rec.created_at or rec.ts
            days[datetime.fromtimestamp(written, tz=timezone.utc).date().isoformat()] += 1
        out.by_type, out.by_category, out.by_state = dict(types), dict(cats.most_common()), dict(states)
        out.added_per_day = dict(sorted(days.items()))
        return out

    def export_view(self, user_id: str, fmt: Literal["jsonl", "md"] = "jsonl", **filters: Any) -> str:
        """What `browse` lists with these filters (every page, in its order) as JSONL, each memory with its
        history, or as MEMORY.md (Active and Archived by score, as `export_md`). Memory.export_view
        documents the arguments and errors."""
        if fmt not in ("jsonl", "md"):
            raise InvalidInput(f"unknown export format {fmt!r}; use jsonl or md")
        records: list[MemoryRecord] = []
        offset: int | None = 0
        while offset is not None:
            page = self.browse(build(BrowseRequest, user_id=user_id, **{**filters, "offset": offset, "limit": 1000}))
            records += page.items
            offset = page.next_offset
        if fmt == "md":
            now = now_ts()
            table = decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
            return memory_md.render([memory_md.md_entry(r, now, table) for r in records], now)
        events: dict[int, list[HistoryEvent]] = defaultdict(list)
        for raw in self.ctx.store.history(F.eq("user_id", V.check_id("user_id", user_id))):
            event = HistoryEvent.model_validate(raw)
            events[event.memory_id].append(event)
        return "".join(dump_line(r, events[r.id]) + "\n" for r in records)
