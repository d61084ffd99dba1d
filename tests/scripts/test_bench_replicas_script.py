"""scripts/bench_replicas.py at the smallest size: one `serve` replica on its own milvus-lite server runs the
chat-hook mix and the table has its row, with nothing failed, lost or repeated. No timing is asserted.
(`--check` runs tests/scale/harness.py, which tests/scale covers.)"""

from __future__ import annotations

from scripts import bench_replicas


def test_one_replica_one_client_prints_its_row(capsys) -> None:
    argv = ["--replicas", "1", "--clients", "1", "--turns", "3", "--users", "2", "--prewarm", "4"]
    assert bench_replicas.main(argv) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 | 1 |")]
    assert len(rows) == 1 and rows[0].rstrip(" |").endswith("| 0 | 0 | 0")  # errors, lost, dup
