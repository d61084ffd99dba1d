"""The speed benchmarks run end to end at a tiny size and report complete results.

No timing is asserted (speed is only benchmarked): these tests check that every layout and every
measured figure is there, and that a filtered top-k never came back short.
"""

from __future__ import annotations

import json
import re
import threading

from scripts import bench, bench_engine


def test_bench_engine_measures_every_layout_against_the_floor(tmp_path):
    out = tmp_path / "engine.json"
    assert bench_engine.main(["--rows", "400", "--users", "4", "--queries", "5", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["rows"] == 400 and "milvus-lite" in report["engine"]
    layouts = {r["layout"]: r for r in report["results"]}
    assert set(layouts) == {"flat", "partition_key", "buckets"}
    for r in layouts.values():  # milvus-lite 3.x supports all three
        assert "error" not in r
        assert r["short_results"] == 0
        assert r["p50_ms"] > 0 and r["floor_p50_ms"] > 0
        assert r["ratio"] == r["p50_ms"] / r["floor_p50_ms"]


def test_bench_engine_stops_the_engine_before_its_folder_goes():
    """The flaky "Directory not empty: 'partitions'" (issue 57): client.close() left milvus-lite's engine
    serving the path, its background worker (compaction, index build after the flush) still writing while
    the temporary folder was removed. Once run() returns, no worker of its collections is alive."""
    bench_engine.run(120, users=2, queries=2)
    workers = [t.name for t in threading.enumerate() if t.name.startswith("milvus_lite-m_")]
    assert workers == []


def test_bench_engine_buckets_follow_crc32_of_the_user():
    assert bench_engine.bucket("user-1") == bench_engine.bucket("user-1")
    assert {bench_engine.bucket(f"user-{i}") for i in range(500)} <= {f"b{i}" for i in range(bench_engine.BUCKETS)}


def test_bench_run_one_reports_every_figure():
    # 40 rows: 40 one-by-one adds, 20 embedded through add_many and 20 synthetic (both load paths), three
    # queries: every figure is measured; a bigger size measures the same things for longer
    result = bench.run_one(40, users=3, queries=3, embed_max=20)
    assert result["rows"] >= 40 and result["embedded_rows"] == 20
    for key in ("add_per_s", "add_many_per_s", "embed_queries_per_s", "open_s", "dense_excl_p50_ms",
                "dense_incl_p50_ms", "hybrid_excl_p50_ms", "dense_neighbours_excl_p50_ms", "floor_p50_ms", "ratio_dense_to_floor", "peak_rss_mb"):
        assert result[key] > 0, key
    phases = result["rss_phases"]
    assert list(phases) == list(bench.PHASES) and all(now > 0 and peak > 0 for now, peak in phases.values())
    assert [peak for _, peak in phases.values()] == sorted(peak for _, peak in phases.values())  # a peak only grows


def test_bench_cli_times_the_command_line_and_long_adds(tmp_path, capsys):
    from scripts import bench_cli

    figures = bench_cli.main(["--runs", "1", "--json", str(tmp_path / "cli.json")])
    assert set(figures) == {"--help", "add", "search", "list", "search --server (service up)", "search, service found by its record",
                            "list, service found by its record", "add 1k chars (in-process)", "add 10k chars (in-process)",
                            "add 60k chars (in-process)"}
    assert all(v > 0 for v in figures.values())
    assert "| search |" in capsys.readouterr().out


def test_bench_cli_importtime_sums_each_packages_own_import_time(tmp_path, capsys):
    from scripts import bench_cli

    totals = bench_cli.main(["--importtime", "--runs", "1", "--json", str(tmp_path / "it.json")])
    assert set(totals) == {"list", "search"} and all(v > 0 for v in totals.values())
    table = json.loads((tmp_path / "it.json").read_text())
    for verb in ("list", "search"):
        groups = [k for k in table[verb] if k not in ("total", "cpu s") and not k.startswith("n ")]
        parts = sum(table[verb][k] for k in groups)
        assert abs(parts - table[verb]["total"]) < 1e-6 * max(1.0, parts)  # every module counted once
        assert sum(table[verb]["n " + k] for k in groups) == table[verb]["n total"] > 100
        assert table[verb]["milvus-lite + faiss"] > 0 and "pymilvus" not in table[verb] and table[verb]["hippocampus.store"] > 0 and table[verb]["cpu s"] > 0
    out = capsys.readouterr().out
    assert "| package (own import time) | list ms | list share | list modules | search ms |" in out and "| total |" in out


def test_bench_prints_the_default_and_cross_language_off_side_by_side_with_ratios(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--sizes", "12", "--users", "2", "--queries", "2", "--embed-max", "6", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("| ")]
    header, body, phases = rows[0].split(" | "), rows[1:4], rows[4:]
    assert header[0] == "| cross-language" and len(rows) == 7  # the figures with their ratios, then RSS by phase
    assert phases[0] == "| cross-language | rows | " + " | ".join(bench.PHASES) + " |"
    assert [r.split(" | ")[0] for r in phases[1:]] == ["| default", "| off"]
    assert all(re.fullmatch(r"\d+ / \d+", c) for r in phases[1:] for c in r.strip("| ").split(" | ")[2:])
    assert [r.split(" | ")[0] for r in body] == ["| default", "| off", "| default / off"]
    assert all(len(r.split(" | ")) == len(header) for r in body)
    assert all(cell.endswith("x") for cell in body[2].rstrip(" |").split(" | ")[2:])  # every figure a ratio
    saved = json.loads(out.read_text())
    assert [r["crosslang"] for r in saved] == ["default", "off"] and all(r["rows"] >= 12 for r in saved)
