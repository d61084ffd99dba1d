"""scripts/bench_fairness.py end to end at the smallest size: a real `hippocampus serve` with two tenants, B's
searches alone and during A's batch, every row of the table there and A's batch stored whole.

No timing is asserted (speed is only benchmarked)."""

from __future__ import annotations

import json

from scripts import bench_fairness


def test_bench_fairness_reports_both_rows(tmp_path, capsys):
    out = tmp_path / "fair.json"
    assert bench_fairness.main(["--texts", "6", "--alone", "2", "--seed", "3", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| alone | 2 |" in table and "| during A's 6-text add_many |" in table and "6 stored" in table
    report = json.loads(out.read_text())
    assert report["stored"] == 6 and report["alone"]["searches"] == 2 and report["during"]["searches"] >= 1


def test_bench_fairness_burst_and_big_turns(tmp_path, capsys):
    """Issue 57's two loads at their smallest: the burst (two add_many, two single-add streams) and
    concurrent 60 KB Chinese turns; every item of A's load counted as stored."""
    out = tmp_path / "burst.json"
    assert bench_fairness.main(["--burst", "--burst-size", "6", "--alone", "2", "--seed", "3", "--json", str(out)]) == 0
    assert "| during two 6-item add_many and two single-add streams |" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["stored"] >= 12 and report["during"]["searches"] >= 1
    assert bench_fairness.main(["--big-turns", "1", "--alone", "1", "--seed", "3", "--json", str(out)]) == 0
    assert "| during 1 concurrent 60 KB Chinese turns |" in capsys.readouterr().out
    assert json.loads(out.read_text())["stored"] >= 1


def test_bench_fairness_alone_batch(tmp_path, capsys):
    """One tenant's add_many with nobody else about: every text counted, its rate reported."""
    out = tmp_path / "alone.json"
    assert bench_fairness.main(["--alone-batch", "5", "--seed", "3", "--json", str(out)]) == 0
    assert "A alone: 5 stored in" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["stored"] == 5 and report["texts_per_s"] > 0
