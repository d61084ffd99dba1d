"""scripts/bench_adds.py: a child's measurement runs real adds, its environment turns cross-language off and
puts another checkout first, and the table's median ratio is the pairs' (never the timings' values)."""

from __future__ import annotations

import os

from scripts import bench_adds


def test_a_child_times_real_adds_on_a_fresh_store() -> None:
    got = bench_adds.measure(3)
    assert got["adds_per_s"] > 0 and got["p50_ms"] > 0


def test_the_children_differ_only_in_the_switch_and_the_code(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_CROSSLANG_EMBEDDER", "use-multilingual")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    off, on = bench_adds.child_env(True, str(tmp_path)), bench_adds.child_env(False, None)
    assert off["HIPPOCAMPUS_CROSSLANG_EMBEDDER"] == "none" and "HIPPOCAMPUS_CROSSLANG_EMBEDDER" not in on
    assert off["PYTHONPATH"] == os.pathsep.join([str(tmp_path.resolve()), "/elsewhere"]) and on["PYTHONPATH"] == "/elsewhere"


def test_the_table_gives_each_pairs_ratio_and_their_median() -> None:
    pairs = [({"adds_per_s": d, "p50_ms": 1.0}, {"adds_per_s": o, "p50_ms": 2.0}) for d, o in ((9, 10), (8, 10), (10, 10))]
    out = bench_adds.table(pairs)
    assert "| 2 | 8.0 | 10.0 | 0.80x |" in out and "**0.90x**" in out
