"""The speed benchmarks run end to end at a tiny size and report complete results.

No timing is asserted (speed is only benchmarked): these tests check that every layout and every
measured figure is there, and that a filtered top-k never came back short.
"""

from __future__ import annotations

import json
import re

from scripts import bench


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


def test_bench_consolidation_prints_its_table_on_a_tiny_conversation(tmp_path, capsys):
    from scripts import bench_consolidation
    from tests.scripts.test_eval_locomo_script import SAMPLE

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert bench_consolidation.main(["--data", str(data), "--sizes", "5", "--no-profile"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 5 |")]
    assert len(rows) == 1 and len(rows[0].split(" | ")) == 10  # memories, users, seconds, ... facts
