"""scripts/eval_slots.py: the table per kind from a few hand-made cases, and a run over the tune half."""

from __future__ import annotations

from scripts.eval_slots import main, render, score

CASES = [
    {"kind": "negation", "supersede": True, "old": "My name is Shawn.", "new": "My name is Sean, not Shawn."},
    {"kind": "non_correction", "supersede": False, "old": "I live in Portland.", "new": "My sister lives in Denver."},
    {"kind": "bare", "supersede": True, "old": "I live in Portland.", "new": "Lovely weather today."},
]


def test_score_counts_per_kind_and_all() -> None:
    table = score(CASES)
    assert (table["negation"]["tp"], table["bare"]["fn"], table["non_correction"]["fp"]) == (1, 1, 0)
    assert table["all"]["precision"] == 1.0 and table["all"]["recall"] == 0.5
    assert [line.split()[0] for line in render(table).splitlines()[2:]] == ["bare", "negation", "non_correction", "all"]


def test_the_tune_half_prints_a_row_per_kind(capsys) -> None:
    assert main(["--split", "tune"]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and all(k in out for k in ("negation", "crosslang", "multifact", "non_correction", "all"))
