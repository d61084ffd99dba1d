"""scripts/count_index_waits.py's table from the lines its plugin writes (hand-written lines; nothing run)."""

from __future__ import annotations

import json

from scripts import count_index_waits


def test_waits_per_file_most_first_and_the_sleep_they_cost(tmp_path, capsys):
    lines = [{"file": "tests/a.py", "waits": 3}, {"file": "tests/b.py", "waits": 0}, {"file": "tests/b.py", "waits": 4},
             {"file": "tests/a.py", "waits": 0}]
    report = tmp_path / "waits.jsonl"
    report.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert count_index_waits.main([str(report)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2:] == ["| tests/b.py | 2 | 4 | 2.0 |", "| tests/a.py | 2 | 3 | 1.5 |", "| all | 4 | 7 | 3.5 |"]
    assert count_index_waits.main([]) == 2  # no report: says how to make one
