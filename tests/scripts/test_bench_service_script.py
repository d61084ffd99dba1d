"""scripts/bench_service.py end to end at the smallest size: a real `hippocampus serve` subprocess and an
in-process Memory run the chat-hook mix; every row of the table is there, nothing failed, nothing was lost.

No timing is asserted (speed is only benchmarked)."""

from __future__ import annotations

import json

from scripts import bench_service


def test_bench_service_reports_every_row_and_loses_nothing(tmp_path, capsys):
    out = tmp_path / "service.json"
    argv = ["--clients", "1,2", "--turns", "3", "--prewarm", "5", "--rounds", "2", "--json", str(out)]
    assert bench_service.main(argv) == 0
    table = capsys.readouterr().out
    for mode in ("service", "in-process"):
        for clients in (1, 2):
            assert f"| {mode} | {clients} | 3 |" in table
    assert "Goals:" in table and "search p50 within 1.5x" in table

    report = json.loads(out.read_text())
    rows = {(r["mode"], r["clients"]): r for r in report["rows"]}
    assert set(rows) == {("service", 1), ("service", 2), ("in-process", 1), ("in-process", 2)}
    for row in rows.values():
        assert row["turns"] == 3 and row["errors"] == 0 and row["lost"] == 0, row
        assert row["turns_per_s"] > 0 and row["search_p50_ms"] > 0 and row["add_p99_ms"] > 0
    assert report["service_acked"] == 6  # 3 turns x 2 client counts, one id per add
    assert report["service_lost_after_restart"] == 0
    assert report["goals"]["lost"] == 0 and report["goals"]["errors"] == 0
    assert report["goals"]["search_p50_ratio_1_client"] > 0
