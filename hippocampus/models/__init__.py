"""Records at the edges of the library: what callers get back and what the store holds, one module per
concern; every public name is importable from here (`from hippocampus.models import MemoryRecord`).

- base.py: Model, the records' base (pydantic's BaseModel, built on first use: a CLI start pays for what it uses)
- kinds.py: MemoryType, State, HistoryAction (the enums memories and events are sorted by)
- categories.py: Category, a project's own (CustomCategory, CategorySpec) and DecayRule, a row of the decay table
- clock.py: now_ts, simulated_clock, ts_to_iso (the library's clock)
- lifecycle.py: Lifecycle, the aging fields kept in a memory's metadata (LIFE_KEY)
- record.py: MemoryRecord (to_row, from_row), HistoryEvent, the row columns and the damaged-row count
- results.py: what the verbs return (SearchResult, AddResult, ObserveResult, UndoResult, MemoryPage, the run stats)
"""

from __future__ import annotations

from .categories import CATEGORY_NAME, AnyCategory, Category, CategorySpec, CustomCategory, DecayRule
from .clock import now_ts, simulated_clock, ts_to_iso
from .kinds import HistoryAction, MemoryType, State
from .lifecycle import DEFAULT_IMPORTANCE, LIFE_KEY, Lifecycle
from .record import (
    CARRIED,
    ROW_FIELDS,
    STAMPS,
    TEXT_MAX_BYTES,
    HistoryEvent,
    MemoryRecord,
    carried,
    damaged_rows,
    note_damaged,
)
from .results import (
    AddResult,
    ConsolidationStats,
    DecayStats,
    MemoryPage,
    ObserveResult,
    Progress,
    SearchHit,
    SearchResult,
    UndoResult,
)

__all__ = [
    "CARRIED", "CATEGORY_NAME", "DEFAULT_IMPORTANCE", "LIFE_KEY", "ROW_FIELDS", "STAMPS", "TEXT_MAX_BYTES",
    "AddResult", "AnyCategory", "Category", "CategorySpec", "ConsolidationStats", "CustomCategory", "DecayRule",
    "DecayStats", "HistoryAction", "HistoryEvent", "Lifecycle", "MemoryPage", "MemoryRecord", "MemoryType",
    "ObserveResult", "Progress", "SearchHit", "SearchResult", "State", "UndoResult",
    "carried", "damaged_rows", "note_damaged", "now_ts", "simulated_clock", "ts_to_iso",
]
