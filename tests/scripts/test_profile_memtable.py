"""scripts/profile_memtable.py at a tiny size: milvus-lite as it ships, each configuration in its own
process (the table's shape, never the timings)."""

from __future__ import annotations

from scripts import profile_memtable


def test_a_configuration_runs_in_its_own_process(capsys) -> None:
    assert profile_memtable.main(["--rows", "40", "--dims", "8", "--searches", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("variant | dim | unflushed | search p50 ms")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [r[0] for r in rows] == ["as shipped"]
    assert all(r[1] == "8" and r[2] == "40" and float(r[3]) > 0 and float(r[5]) > 0 for r in rows)


def test_through_memory_it_searches_before_and_after_reopening(capsys) -> None:
    assert profile_memtable.main(["--memories", "30", "--searches", "5"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("variant | memories | written by | writes s | dense p50 ms, rows unflushed | dense p50 ms, reopened")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [r[0] for r in rows] == ["as shipped"] and all(r[1] == "30" and r[2] == "add_many" and float(r[4]) > 0 for r in rows)


def test_one_at_a_time_goes_through_add(capsys) -> None:
    assert profile_memtable.main(["--memories", "12", "--one-at-a-time", "--searches", "4"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.strip().splitlines()[2:]]
    assert [r[2] for r in rows] == ["add"]


def test_insert_rss_reports_growth_beside_the_vectors_own_size_for_each_index(capsys) -> None:
    assert profile_memtable.main(["--insert-rss", "600", "--per-call", "250"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("memtable | index | rows | per call | insert s | flush s | search p50 ms | their vectors MB | RSS grown MB")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [r[1] for r in rows] == ["AUTOINDEX", "FLAT"]  # each in its own process
    assert all(r[0] == "as shipped" and r[2:4] == ["600", "250"] and float(r[6]) > 0 and float(r[-1]) >= 0 for r in rows)
