"""scripts/eval_sparse_head.py: its BM25, its fusion, and a run on a tiny LoCoMo-shaped file."""

from __future__ import annotations

import json

import numpy as np

from scripts.eval_sparse_head import COMBOS, bm25_scorer, combine, main, tokens
from tests.scripts.test_eval_locomo_script import SAMPLE


def test_tokens_drop_stop_words_and_case():
    assert tokens("Where did Ben HIKE with his sister?") == ["ben", "hike", "sister"]


def test_bm25_ranks_the_document_with_the_rare_word_first():
    score = bm25_scorer(["Ben hiked up Mount Tamalpais", "Ana adopted a kitten", "Ben likes bread"])
    s = score("Which mountain did Ben hike? Tamalpais")
    assert int(np.argmax(s)) == 0 and s[1] == 0.0


def test_combine_scales_each_signal_before_summing():
    signals = {"dense": np.array([0.8, 0.9]), "bm25": np.array([10.0, 0.0])}
    assert combine(signals, "dense") is signals["dense"]
    np.testing.assert_allclose(combine(signals, "dense+bm25"), [1.0, 1.0], atol=1e-6)


def test_the_probe_reports_every_combination(tmp_path, capsys):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 questions")
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| signals")]
    assert [r.split(" | ")[0][2:] for r in rows] == list(COMBOS)
    assert all(r.split(" | ")[1] == "1.000" for r in rows)  # five turns: every evidence turn is in the top 5
    assert "encoder cost" in out
