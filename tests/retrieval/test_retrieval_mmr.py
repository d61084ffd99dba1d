"""Maximal marginal relevance after ranking (retrieval/ranking.py `diversify`; `rank_mmr_weight`, off
by default): pure properties first, then one real milvus-lite search with the offline embedder."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.retrieval.fusion import Candidate
from hippocampus.retrieval.ranking import diversify


def _cand(i: int, score: float, vector: list[float] | None) -> Candidate:
    return Candidate(row={"id": i}, similarity=score, score=score, vector=vector)


def _never(ids: list[int]) -> dict[int, list[float]]:
    raise AssertionError(f"nothing to fetch, asked for {ids}")


def test_weight_zero_is_the_identity_and_fetches_nothing():
    items = [_cand(1, 0.9, [1, 0]), _cand(2, 0.95, None)]
    assert diversify(items, 0.0, _never) == items
    assert [c.score for c in items] == [0.9, 0.95]


def test_a_near_copy_gives_way_to_a_different_memory():
    first, copy, other = _cand(1, 0.90, [1, 0, 0]), _cand(2, 0.89, [0.99, 0.14, 0]), _cand(3, 0.80, [0, 1, 0])
    out = diversify([first, copy, other], 0.25, _never)
    assert [c.id for c in out] == [1, 3, 2]
    assert copy.parts["mmr"] == pytest.approx(-0.25 * 0.99, abs=1e-3) and other.parts["mmr"] == 0.0
    assert diversify([_cand(1, 0.90, [1, 0, 0]), _cand(2, 0.89, [0.99, 0.14, 0]), _cand(3, 0.80, [0, 1, 0])],
                     0.01, _never)[1].id == 2  # a small weight only breaks near-ties


def test_missing_vectors_are_fetched_and_an_item_without_one_is_never_penalised():
    asked: list[list[int]] = []

    def fetch(ids: list[int]) -> dict[int, list[float]]:
        asked.append(ids)
        return {2: [1.0, 0.0]}  # 3's vector is gone (deleted meanwhile)

    items = [_cand(1, 0.9, [1.0, 0.0]), _cand(2, 0.85, None), _cand(3, 0.84, None)]
    out = diversify(items, 0.5, fetch)
    assert asked == [[2, 3]]
    assert [c.id for c in out] == [1, 3, 2] and out[1].parts["mmr"] == 0.0


vectors = st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3).filter(lambda v: np.linalg.norm(v) > 1e-3)


@given(st.lists(st.tuples(st.floats(0, 2, allow_nan=False), vectors), min_size=1, max_size=12), st.floats(0.01, 2))
def test_diversify_is_a_permutation_whose_scores_fall_down_the_list(rows, weight):
    items = [_cand(i, s, v) for i, (s, v) in enumerate(rows)]
    before = {c.id: c.score for c in items}
    out = diversify(items, weight, _never)
    assert sorted(c.id for c in out) == list(range(len(rows)))
    assert all(a.score >= b.score - 1e-9 for a, b in zip(out, out[1:]))
    assert out[0].id == max(before, key=lambda i: (before[i], -i))  # the best match always leads
    assert all(-weight - 1e-6 <= c.score - before[c.id] <= 1e-9 for c in out)  # a penalty is at most the weight


def test_on_a_real_store_the_second_place_goes_to_another_fact(shared_db, embedder):
    """Two near-copies (cosine 0.997 with the offline e5) lead a dense search; with MMR the second place
    goes to the bakery fact that adds something (cosine 0.86 to the first)."""
    texts = ["I moved to Berlin in March for a new job at a bakery",
             "I moved to Berlin in March for my new job at the bakery",
             "At the bakery my shift starts at 5 am, I bake the rye bread",
             "My sister Lena lives in Hamburg and teaches piano"]
    for weight, second in ((0.0, 1), (0.5, 2)):
        with Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder,
                    rank_mmr_weight=weight) as m:
            ids = m.add_many([{"text": t, "user_id": "u", "chat_id": f"c{i}", "ts": 1_767_225_600 + i * 86400}
                              for i, t in enumerate(texts)])
            hits = m.search("Tell me about my job at the bakery in Berlin", user_id="u", limit=4, mode="dense").episodic
            assert [ids.index(h.id) for h in hits[:2]] == [0, second], [(h.text, h.score, h.signals) for h in hits]
            assert ("mmr" in hits[1].signals) == (weight > 0)
            assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


@pytest.mark.parametrize("value", [-0.1, 2.5])
def test_an_mmr_weight_out_of_range_is_refused(value):
    from pydantic import ValidationError

    from hippocampus.config import MemoryConfig

    with pytest.raises(ValidationError, match="rank_mmr_weight"):
        MemoryConfig(rank_mmr_weight=value)
