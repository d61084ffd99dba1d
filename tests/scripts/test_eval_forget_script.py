"""scripts/eval_forget.py: its pure parts (the judge of one row, the table's cells and text) and an
offline run on 3 rows of the labelled set through add(infer=True), with the JSON it writes."""

from __future__ import annotations

import json

from scripts.eval_forget import COLUMNS, judge, load_rows, main, render, score

ROW = {"id": "f01", "kind": "forget", "turn": "Please forget that I like jazz", "prior": ["I like jazz", "I like cats"],
       "gone": ["I like jazz"], "stays": ["I like cats"]}


def test_the_judge_reads_what_the_store_shows() -> None:
    assert judge(ROW, ["I like cats"], set(), "")["ok"]
    still = judge(ROW, ["I like jazz", "I like cats"], set(), "")
    assert not still["ok"] and "'I like jazz' still active" in still["problems"]
    assert not judge(ROW, ["I like cats"], set(), "- I like jazz")["ok"]  # still in the prompt block
    stored = judge(ROW, ["I like cats", "Please forget that I like jazz"], set(), "")
    assert not stored["ok"] and stored["request_stored"]
    keep = {**ROW, "kind": "keep", "gone": [], "stays": ["I like cats"]}
    assert judge(keep, ["I like cats", "I like jazz"], set(), "")["ok"]  # a look-alike may store news


def test_score_and_render_count_per_kind() -> None:
    outcomes = [{"kind": "forget", "ok": True, "request_stored": False}, {"kind": "forget", "ok": False, "request_stored": True},
                {"kind": "keep", "ok": True, "request_stored": False}, {"kind": "correction", "ok": False, "request_stored": False}]
    cells = score(outcomes)
    assert cells == {COLUMNS[0]: "1/2", COLUMNS[1]: "1/1", COLUMNS[2]: "0/1", COLUMNS[3]: 1}
    text = render({"infer": cells}, "title")
    assert text.splitlines()[0] == "title" and text.splitlines()[3].split()[:2] == ["infer", "1/2"]


def test_an_offline_run_on_three_rows(tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    assert main(["--limit", "3", "--paths", "infer", "--quiet", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "offline rules provider" in printed and printed.splitlines()[3].split()[0] == "infer"
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [o["id"] for o in data["outcomes"]["infer"]] == [r["id"] for r in load_rows()[:3]]
    assert data["table"]["infer"][COLUMNS[0]] == "3/3" and data["table"]["infer"][COLUMNS[3]] == 0
