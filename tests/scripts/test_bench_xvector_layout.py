"""scripts/bench_xvector_layout.py on a few rows: the three layouts are made, filled and timed, and the
table names each with a time where it has that search and a dash where it has not."""

from __future__ import annotations

from scripts.bench_xvector_layout import main


def test_the_table_has_a_row_per_layout(capsys) -> None:
    assert main(["--rows", "150", "--repeat", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = {line.split()[0] if not line.startswith("with field") else "with field": line for line in lines[2:]}
    assert set(table) == {"memories", "with field", "companion"}
    assert table["memories"].split()[-1] == "-" and table["companion"].split()[-3:-1] == ["-", "-"]
    assert all(float(x) > 0 for x in table["with field"].split()[2:])
