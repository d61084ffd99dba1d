"""scripts/profile_crosslang.py at a tiny size: every part of a search timed, with the stage on and off
(the table's shape and the parts' bookkeeping, never their values)."""

from __future__ import annotations

import json

from scripts import profile_crosslang


def test_every_part_of_a_search_is_timed_with_the_stage_on_and_off(tmp_path, capsys) -> None:
    out = tmp_path / "xl.json"
    assert profile_crosslang.main(["--rows", "40", "--users", "2", "--queries", "3", "--embed-max", "40", "--json", str(out)]) == 0
    default, off = json.loads(out.read_text())
    assert default["cross-language"] == "default" and off["cross-language"] == "off"
    assert set(profile_crosslang.PARTS) | {"search"} <= set(default)
    assert set(off) == {"cross-language", "dense gathering", "hubness", "search"}  # no stage, no parts of it
    assert default["USE query embedding"] > 0 and default["nearest cross vectors (Milvus)"] > 0  # every user has both scripts
    assert all(default[p] <= default["search"] for p in profile_crosslang.PARTS)
    table = capsys.readouterr().out
    assert "| read of the gathered rows |" in table and "default / off =" in table
