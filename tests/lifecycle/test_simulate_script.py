"""scripts/simulate_lifecycle.py at a small size (60 days, 120 turns) on a real store: the checks a
person would make after months of chat hold, and the table and plot are written."""

from __future__ import annotations

import uuid

from hippocampus import Memory
from scripts import simulate_lifecycle as sim


def test_a_small_simulated_stretch_keeps_what_matters_and_loses_nothing(shared_db, embedder, tmp_path):
    with Memory(milvus_uri=str(shared_db), collection_name=f"sim_{uuid.uuid4().hex[:10]}", embedder=embedder) as memory:
        year = sim.simulate(memory, turns=120, days=60, seed=3, consolidate_every=10)
    checks = year.checks
    for name in ("'Lina' in core", "'tea' in core", "'jazz' in core", "new city active", "old city superseded",
                 "past todos archived", "prompt block <= 20 lines", "nothing lost without history"):
        assert checks[name][0], (name, checks[name][1])
    assert [m.month for m in year.months] == [1, 2]
    assert all(m.block_lines <= 20 for m in year.months) and year.months[-1].core >= 3
    text = sim.table(year)
    assert "| month | active | archived | core |" in text and "nothing lost without history" in text
    png = sim.plot(year, tmp_path / "year.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
