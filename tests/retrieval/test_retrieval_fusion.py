"""Fusion and ranking as pure functions: the formulas documented in retrieval/fusion.py and ranking.py."""

from __future__ import annotations

import math

import pytest

from hippocampus.retrieval.fusion import (
    Candidate,
    collect,
    fuse,
    lexical_allowed,
    query_scripts,
    same_script,
    script_of,
)
from hippocampus.retrieval.ranking import RankParams, rank, recency, usage


def _row(i: int, text: str, ts: int = 0, hit_count: int = 0, **meta) -> dict:
    return {"id": i, "text": text, "ts": ts, "hit_count": hit_count, "metadata": meta}


def test_script_of_detects_han_latin_and_other():
    assert script_of("redis 集群的配置在哪里") == "han"
    assert script_of("Where is the redis config?") == "latin"
    assert script_of("2023-05-08 12:00") == "other"
    assert same_script("other", "han") and same_script("latin", "latin")
    assert not same_script("han", "latin")
    assert query_scripts("redis 集群的配置在哪里") == {"han", "latin"}
    assert query_scripts("我的猫叫什么") == {"han"} and query_scripts("2023?") == set()
    assert lexical_allowed({"han", "latin"}, "Deployed redis") and not lexical_allowed({"latin"}, "我喜欢苹果")


def test_collect_unions_by_id_and_turns_bm25_distances_positive():
    dense = [{**_row(1, "a"), "_distance": 0.9}, {**_row(2, "b"), "_distance": 0.8}]
    bm25 = [{**_row(2, "b"), "_distance": -3.0}, {**_row(3, "c"), "_distance": -1.5, "vector": [1.0, 0.0]}]
    cands = {c.id: c for c in collect(dense, bm25, query_vector=[0.6, 0.8])}
    assert set(cands) == {1, 2, 3}
    assert cands[2].similarity == pytest.approx(0.8) and cands[2].bm25 == pytest.approx(3.0)
    assert cands[2].dense_rank == 1 and cands[2].bm25_rank == 0
    # a BM25-only hit gets its exact cosine from the returned vector
    assert cands[3].similarity == pytest.approx(0.6) and cands[3].dense_rank is None
    assert cands[1].bm25 is None


def test_weighted_fusion_is_cosine_plus_bounded_bm25_bonus():
    cands = [
        Candidate(row=_row(1, "apples and pears"), similarity=0.80, bm25=4.0, dense_rank=1, bm25_rank=0),
        Candidate(row=_row(2, "bananas"), similarity=0.82, bm25=None, dense_rank=0),
        Candidate(row=_row(3, "apples"), similarity=0.70, bm25=2.0, bm25_rank=1),
    ]
    out = fuse(cands, "apples", method="weighted", bm25_weight=0.1)
    scores = {c.id: c.score for c in out}
    assert scores[1] == pytest.approx(0.80 + 0.1 * 1.0)
    assert scores[2] == pytest.approx(0.82)
    assert scores[3] == pytest.approx(0.70 + 0.1 * 0.5)
    assert [c.id for c in out] == [1, 2, 3]


def test_weighted_fusion_ignores_bm25_across_scripts():
    """An English question and a Chinese memory share at most a name or a number: that match is noise."""
    def cands():
        return [
            Candidate(row=_row(1, "Deployed the redis cluster on three nodes"), similarity=0.86, dense_rank=0),
            Candidate(row=_row(2, "redis 集群的配置文件在服务器上"), similarity=0.79, bm25=9.0, dense_rank=1, bm25_rank=0),
        ]

    out = fuse(cands(), "Where is the redis configuration?", method="weighted", bm25_weight=0.5)
    assert [c.id for c in out] == [1, 2]
    assert {c.id: c.parts["bm25_norm"] for c in out}[2] == 0.0
    # the same candidates, fused without the script check, let the lexical noise win
    blind = fuse(cands(), "Where is the redis configuration?", method="weighted", bm25_weight=0.5, script_aware=False)
    assert [c.id for c in blind] == [2, 1]


def test_weighted_fusion_lets_bm25_reorder_only_the_memories_it_can_see():
    """A Chinese question about an English memory: BM25 cannot see the English one, so a Chinese
    memory's bonus for a shared common word may not push it down; among the Chinese memories BM25
    still decides (docs/crosslang.md)."""
    def cands():
        return [
            Candidate(row=_row(1, "我弟弟在深圳做程序员"), similarity=0.40, bm25=3.0, dense_rank=2, bm25_rank=0),
            Candidate(row=_row(2, "周末我在网上教中文"), similarity=0.45, dense_rank=0),
            Candidate(row=_row(3, "I work as a nurse in the pediatric ward"), similarity=0.42, dense_rank=1),
        ]

    out = fuse(cands(), "我是做什么职业的？", method="weighted", bm25_weight=0.1)
    assert [c.id for c in out] == [1, 3, 2]  # 1 and 2 swapped places; the English memory kept the second
    scores = {c.id: c.score for c in out}
    assert scores == pytest.approx({1: 0.45, 2: 0.40, 3: 0.42})
    assert {c.id: c.parts["bm25_shift"] for c in out} == pytest.approx({1: 0.05, 2: -0.05, 3: 0.0})
    plain = fuse(cands(), "我是做什么职业的？", method="weighted", bm25_weight=0.1, script_aware=False)
    assert [c.id for c in plain] == [1, 2, 3]  # a plain bonus (no script check) leaves it last
    # with every candidate in the query's script the formula is the plain bounded bonus
    same = fuse(cands()[:2], "我是做什么职业的？", method="weighted", bm25_weight=0.1)
    assert {c.id: c.score for c in same} == pytest.approx({1: 0.50, 2: 0.45}) and "bm25_shift" not in same[0].parts


def test_rrf_fusion_formula_and_script_awareness():
    cands = [
        Candidate(row=_row(1, "alpha"), similarity=0.9, dense_rank=0, bm25_rank=2, bm25=1.0),
        Candidate(row=_row(2, "beta"), similarity=0.8, dense_rank=1),
        Candidate(row=_row(3, "阿尔法"), similarity=0.7, bm25_rank=0, bm25=5.0),
    ]
    out = fuse(cands, "alpha", method="rrf", rrf_k=60)
    scores = {c.id: c.score for c in out}
    assert scores[1] == pytest.approx(1 / 61 + 1 / 63)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(0.0)  # Han memory, Latin query: its BM25 vote is dropped
    plain = fuse(cands, "alpha", method="rrf", rrf_k=60, script_aware=False)
    assert {c.id: c.score for c in plain}[3] == pytest.approx(1 / 61)


def test_ranking_is_identity_with_zero_weights():
    items = [Candidate(row=_row(i, "x", ts=i * 86400, hit_count=i), score=1.0 - i / 10) for i in range(5)]
    assert [c.id for c in rank(items, RankParams())] == [0, 1, 2, 3, 4]
    assert [c.score for c in items] == [1.0 - i / 10 for i in range(5)]


def test_ranking_terms_follow_the_documented_formula():
    now = 100 * 86400
    assert recency(now, {}, now, 30) == pytest.approx(1.0)
    assert recency(now - 30 * 86400, {}, now, 30) == pytest.approx(0.5)
    assert recency(0, {"last_used_at": now - 30 * 86400}, now, 30) == pytest.approx(0.5)
    assert usage(0) == 0.0 and usage(10) == pytest.approx(1.0) and usage(1000) == 1.0
    assert usage(3) == pytest.approx(math.log1p(3) / math.log1p(10))
    old = Candidate(row=_row(1, "old", ts=now - 60 * 86400, importance=0.9), score=0.80)
    new = Candidate(row=_row(2, "new", ts=now - 1 * 86400), score=0.78)
    params = RankParams(recency_weight=0.1, half_life_days=30)
    out = rank([old, new], params, now=now)
    assert [c.id for c in out] == [2, 1]
    assert old.score == pytest.approx(0.80 + 0.1 * 0.25)
    imp = rank([Candidate(row=old.row, score=0.5), Candidate(row=_row(3, "plain"), score=0.5)], RankParams(importance_weight=1.0), now=now)
    assert [c.id for c in imp] == [1, 3]  # importance 0.9 beats the default 0.5
