"""scripts/eval_locomo.py on a tiny LoCoMo-shaped file: the evidence quirks, the metrics, both ingestion
styles, and the JSON shape the retrieval issue asks for (mode -> category -> metric)."""

from __future__ import annotations

import json

import pytest

from scripts.eval_locomo import main, normalise_evidence, score, turns_of

SAMPLE = {
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Did you go anywhere last weekend?"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Yes, I hiked up Mount Tamalpais with my sister."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "I adopted a grey kitten called Pixel.", "blip_caption": "a grey kitten"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My new job at the bakery starts on Monday."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Congratulations! Pixel says hi."},
        ],
    },
    "qa": [
        {"question": "Which mountain did Ben hike?", "evidence": ["D1:2"], "category": 4},
        {"question": "What is the name of Ana's kitten?", "evidence": ["D:1:3; D2:02"], "category": 1},
        {"question": "Where does Ben work now?", "evidence": ["D2:1"], "category": 2},
        {"question": "An adversarial one", "evidence": ["D1:1"], "category": 5},
        {"question": "Evidence of a missing turn", "evidence": ["D9:9"], "category": 3},
    ],
}


def test_evidence_ids_are_normalised_and_missing_turns_dropped():
    known = {"D1:3", "D2:2", "D11:26"}
    assert normalise_evidence(["D:1:3; D2:02", "D11:26", "D9:9", "D1:3"], known) == ["D1:3", "D2:2", "D11:26"]


def test_score_counts_hits_all_and_reciprocal_rank():
    ranked = ["D1:1", "D1:2", None, "D2:1", "D2:2", "D3:1"]
    assert score(ranked, ["D2:1", "D3:1"]) == {"hit@5": 1.0, "all@5": 0.0, "hit@10": 1.0, "all@10": 1.0, "mrr@10": 0.25}
    assert score(ranked, ["D9:9"])["mrr@10"] == 0.0
    deep = ["D1:1"] * 10 + ["D4:4"]
    assert score(deep, ["D1:1", "D4:4"], ceiling=20)["all@20"] == 1.0 and score(deep, ["D1:1", "D4:4"])["all@10"] == 0.0


def test_exchange_ingestion_stores_each_turn_with_the_one_before():
    plain, paired = turns_of(SAMPLE), turns_of(SAMPLE, exchange=True)
    assert [t["metadata"]["dia_id"] for t in plain] == [t["metadata"]["dia_id"] for t in paired]
    assert plain[1]["text"] == "Ben: Yes, I hiked up Mount Tamalpais with my sister."
    assert paired[0]["text"] == plain[0]["text"]  # the first turn of a session has nothing before it
    assert paired[2]["messages"] == [
        {"role": "Ben", "content": "Yes, I hiked up Mount Tamalpais with my sister."},
        {"role": "Ana", "content": "I adopted a grey kitten called Pixel. [shares a photo: a grey kitten]"},
    ]
    assert "messages" not in paired[3]  # sessions do not run into each other


def test_exchange_of_two_turns_stores_the_two_before_within_the_session():
    one, two = turns_of(SAMPLE, exchange=1), turns_of(SAMPLE, exchange=2)
    assert two[1]["messages"] == one[1]["messages"]  # only one turn lies before the second
    assert [m["role"] for m in two[2]["messages"]] == ["Ana", "Ben", "Ana"]
    assert two[2]["messages"][1:] == one[2]["messages"]
    assert "messages" not in two[3]


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_exchange_needs_a_positive_number_of_turns(tmp_path, bad: str, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--data", str(tmp_path / "missing.json"), "--exchange", bad])
    assert exit_info.value.code == 2 and "--exchange" in capsys.readouterr().err


@pytest.mark.parametrize("exchange", [False, True])
def test_the_script_writes_mode_category_metric_json(tmp_path, exchange: bool):
    data, out = tmp_path / "locomo.json", tmp_path / "out.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["--data", str(data), "--json", str(out)] + (["--exchange"] if exchange else [])) == 0
    report = json.loads(out.read_text())
    assert report["meta"]["questions"] == 3 and report["meta"]["skipped_questions"] == 1
    for mode in ("dense", "bm25", "hybrid"):
        assert set(report[mode]["overall"]) >= {"hit@5", "hit@10", "all@5", "all@10", "mrr@10"}
        assert report[mode]["overall"]["hit@5"] == 1.0  # five turns: every evidence turn is in the top 5
        assert report[mode]["1"]["all@5"] == 1.0 and report[mode]["overall"]["n"] == 3


def test_the_ceiling_reports_all_at_n_and_refuses_a_shallow_depth(tmp_path, capsys):
    data, out = tmp_path / "locomo.json", tmp_path / "out.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["--data", str(data), "--json", str(out), "--modes", "dense", "--ceiling", "12"]) == 0
    assert json.loads(out.read_text())["dense"]["overall"]["all@12"] == 1.0  # five turns: all of them within 12
    assert "all@12" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--data", str(data), "--ceiling", "10"])
