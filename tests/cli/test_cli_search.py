"""`hippocampus search` prints one ranked list: both kinds together in SearchResult.all's order, the
kind on each row, and --limit rows at most (before: semantic rows first, then episodic, and
`--limit 2` printed up to 4 rows, two of each kind)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app

runner = CliRunner(env={"COLUMNS": "200"})


def _rows(output: str) -> list[tuple[str, int]]:
    """(kind, id) of each printed row."""
    return [(m.group(1), int(m.group(2))) for m in re.finditer(r"│\s*\d+\s*│\s*(episodic|semantic)\s*│[^│]*│[^│]*│\s*(\d+)\s*│", output)]


def test_search_prints_one_ranked_list_of_limit_rows(fresh_path: str, embedder):
    with Memory(milvus_uri=fresh_path, embedder=embedder) as memory:
        memory.add_many([
            {"text": "I moved to Berlin in May", "user_id": "alice", "ts": 1_700_000_000},
            {"text": "We moved into a flat in Berlin Mitte last spring", "user_id": "alice", "ts": 1_700_000_100},
            {"text": "The user likes ramen", "user_id": "alice", "memory_type": "semantic"},
            {"text": "The user plays tennis on Sundays", "user_id": "alice", "memory_type": "semantic"},
        ])
        expected = [(h.memory.memory_type.value, h.id) for h in memory.search("where did I move to?", user_id="alice").all]
    full = runner.invoke(app, ["--uri", fresh_path, "search", "where did I move to?", "-u", "alice"])
    assert full.exit_code == 0, full.output
    assert _rows(full.output) == expected and expected[0][0] == "episodic"  # ranked, not semantic first
    two = runner.invoke(app, ["--uri", fresh_path, "search", "where did I move to?", "-u", "alice", "--limit", "2"])
    assert two.exit_code == 0, two.output
    assert _rows(two.output) == expected[:2]
