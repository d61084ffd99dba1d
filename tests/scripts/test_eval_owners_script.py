"""scripts/eval_owners.py (issue 55, item 5): the labelled set's shape and the owner judgement it prints."""

from __future__ import annotations

from collections import Counter

from scripts.eval_owners import judge, keeps_owner, load_rows


def test_the_set_has_both_languages_in_both_splits():
    rows = load_rows()
    assert len(rows) >= 150 and len({r["id"] for r in rows}) == len(rows)
    assert set(Counter((r["lang"], r["split"]) for r in rows)) == {(lang, s) for lang in ("zh", "en") for s in ("tune", "held_out")}
    assert all(r["fact"] in r["text"] and any(o in r["text"] for o in r["owner"]) for r in rows)


def test_the_owner_judgement():
    row = {"owner": ["老公", "李明"], "fact": "建筑设计师"}
    assert judge(["我老公叫李明，是一名建筑设计师。", "用户的老公是一名建筑设计师"], row) == "kept"
    assert judge(["我老公叫李明，是一名建筑设计师。", "用户是一名建筑设计师"], row) == "moved"
    assert judge(["用户是一名数学老师"], row) == "not stored"
    assert keeps_owner("我爸去年做了心脏支架，我现在每天吃阿司匹林", ["爸"], "阿司匹林") is False
    assert keeps_owner("The user's husband Mark is an architect", ["husband"], "architect") is True
