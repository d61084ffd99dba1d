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
