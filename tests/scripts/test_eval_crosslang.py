"""scripts/eval_crosslang.py on a few rows of the bilingual set with the default embedder: the set's
shape (one user's store, both directions in both splits), the table's shape, hit counts within
range, and the JSON the script writes."""

from __future__ import annotations

import json
from collections import Counter

from scripts.eval_crosslang import DEFAULT_DATA, MODES, evaluate, load_rows, main


def test_the_set_has_both_directions_in_both_splits_and_distractors():
    rows = load_rows(DEFAULT_DATA)
    pairs = [r for r in rows if not r.get("distractor")]
    assert len(pairs) >= 48 and sum(1 for r in rows if r.get("distractor")) >= 30
    cells = Counter((r["split"], r["question_lang"], r["memory_lang"]) for r in pairs)
    assert set(cells) == {(s, q, m) for s in ("tune", "held_out") for q, m in (("zh", "en"), ("en", "zh"))}
    assert len(set(cells.values())) == 1  # as many in each split and direction
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r["question"] != r["memory"] and r["question_same"] for r in pairs)


def _tiny() -> list[dict]:
    rows = load_rows(DEFAULT_DATA)
    keep = {"en01", "en13", "zh03", "zh13", "den01", "dzh01"}
    return [r for r in rows if r["id"] in keep]


def test_evaluate_returns_a_table_per_mode_and_direction(tmp_path, embedder):
    report = evaluate(_tiny(), embedder, {}, split="all", workdir=str(tmp_path))
    assert list(report["modes"]) == list(MODES)
    for table in report["modes"].values():
        assert list(table) == ["zh->en", "en->zh", "overall"]
        assert table["overall"]["n"] == 4 and table["zh->en"]["n"] == table["en->zh"]["n"] == 2
        for cell in table.values():
            assert 0 <= cell["hit@1"] <= cell["hit@3"] <= cell["n"]
        assert table["overall"]["hit@3"] == table["zh->en"]["hit@3"] + table["en->zh"]["hit@3"]
    assert len(report["questions"]) == 4 and report["meta"]["memories"] == 6
    for lost in report["lost"]:  # a question a mode lost against the cosine: its rank after each stage
        assert lost["mode"] in ("dense", "hybrid") and min(lost["found_by"].values()) <= 3
        assert list(lost["ranks"])[:3] == ["gather", "hubness", "fusion"]


def test_the_script_writes_both_splits_and_the_same_language_control(tmp_path):
    data, out = tmp_path / "pairs.jsonl", tmp_path / "out.json"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _tiny()), encoding="utf-8")
    assert main(["--data", str(data), "--modes", "cosine,hybrid", "--same-language", "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["splits"]) == {"tune", "held_out"}
    for split in report["splits"].values():
        assert set(split["modes"]) == {"cosine", "hybrid"} and split["meta"]["same_language"] is True
        assert set(split["modes"]["hybrid"]) == {"zh->zh", "en->en", "overall"}
