"""scripts/bench_lite_direct.py at a tiny size: every search runs through both paths in one process, and the
switch it flips really sends one half through pymilvus (the table's shape, never its values)."""

from __future__ import annotations

from hippocampus.store import lite_direct
from scripts import bench_lite_direct


def test_each_search_runs_through_the_engine_and_through_grpc(tmp_path, capsys, monkeypatch) -> None:
    seen: list[tuple[bool, bool]] = []
    real = lite_direct.Direct.search

    def search(self, *args, **kwargs):
        hits = real(self, *args, **kwargs)
        seen.append((lite_direct.enabled(), hits is not None))
        return hits

    monkeypatch.setattr(lite_direct.Direct, "search", search)
    assert bench_lite_direct.main(["--rows", "30", "--users", "2", "--queries", "3", "--embed-max", "30"]) == 0
    assert (True, True) in seen and (False, False) in seen and (False, True) not in seen
    table = capsys.readouterr().out
    for mode in bench_lite_direct.MODES:
        assert f"| {mode} |" in table
