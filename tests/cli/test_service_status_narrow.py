"""Issue 45: `hippocampus service status` at 40 columns cut every column of its table ("http://127.0.0.…",
a pid of "", "…" for the state, "/tmp/…emor…" for the store). Below the table's width each service is
printed as labelled lines instead: the URL, pid and state whole, the store folded in its middle (its
root and file name kept), within the terminal. The CLI in a subprocess, at the width COLUMNS says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.cells import cell_len

from tests.cli.test_narrow_terminals import hippocampus

URL = "http://127.0.0.1:8765"


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    store = tmp_path / ("projects/" * 4) / "customer-support-agent" / "memories.db"
    services = tmp_path / "home" / "services"
    services.mkdir(parents=True)
    (services / "4242.json").write_text(json.dumps({"url": URL, "pid": 4242, "store": str(store), "collection": None,
                                                    "started_at": "2026-11-28T09:00:00+00:00"}))
    return store


@pytest.mark.parametrize("columns", [40, 52, 66])
def test_service_status_is_readable_in_a_narrow_terminal(tmp_path: Path, recorded: Path, columns: int) -> None:
    out = hippocampus(tmp_path, "service", "status", columns=columns).stdout
    assert max(cell_len(line) for line in out.splitlines()) <= columns, out
    assert URL in out and "4242" in out and "stale" in out and "/memories.db" in out, out  # before, at 40: all cut
    assert str(recorded) in hippocampus(tmp_path, "service", "status", "--json", columns=columns).stdout


def test_at_40_columns_each_service_is_labelled_lines(tmp_path: Path, recorded: Path) -> None:
    out = hippocampus(tmp_path, "service", "status", columns=40).stdout
    fields = dict(line.split(maxsplit=1) for line in out.splitlines()[1:] if line.strip())
    fields = {k: v.strip() for k, v in fields.items()}
    assert fields["url"] == URL and fields["pid"] == "4242" and fields["state"] == "stale", out
    assert fields["store"].startswith(str(tmp_path)[:5]) and fields["store"].endswith("/memories.db") and "…" in fields["store"]
    assert fields["since"] == "2026-11-28 09:00"
