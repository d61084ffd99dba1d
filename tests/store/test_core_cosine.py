"""Seed 000's T-MEM-COS-01..05 on hippocampus.embeddings.cosine_similarity (and `normalize`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hippocampus.embeddings import cosine_similarity, normalize


def test_T_MEM_COS_01_identical_vectors():
    assert cosine_similarity([1, 0, 0], [1, 0, 0]) == 1.0
    assert cosine_similarity([3.0, 4.0], [3.0, 4.0]) == pytest.approx(1.0, abs=1e-12)


def test_T_MEM_COS_02_orthogonal_vectors():
    assert cosine_similarity([1, 0, 0], [0, 1, 0]) == 0.0


def test_T_MEM_COS_03_opposite_vectors():
    assert cosine_similarity([1, 0, 0], [-1, 0, 0]) == -1.0


def test_T_MEM_COS_04_zero_vector_is_zero_not_nan():
    assert cosine_similarity([0, 0, 0], [1, 0, 0]) == 0.0
    assert cosine_similarity([1, 0, 0], [0, 0, 0]) == 0.0
    assert cosine_similarity([0, 0, 0], [0, 0, 0]) == 0.0
    assert not math.isnan(cosine_similarity([0.0] * 1536, [1.0] * 1536))
    zero_rows = normalize(np.zeros((2, 4)))
    assert np.array_equal(zero_rows, np.zeros((2, 4)))  # normalize leaves zero rows zero, no NaN


def test_T_MEM_COS_05_high_dimensional_vectors_match_the_formula():
    rng = np.random.default_rng(1536)
    for _ in range(20):
        a, b = rng.normal(size=1536), rng.normal(size=1536)
        expected = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert cosine_similarity(a, b) == pytest.approx(expected, abs=1e-12)
        assert cosine_similarity(a.tolist(), b.tolist()) == pytest.approx(expected, abs=1e-12)
    a = rng.normal(size=1536)
    assert cosine_similarity(a, 7.5 * a) == pytest.approx(1.0, abs=1e-12)  # scale does not matter
    assert cosine_similarity(a, -a) == pytest.approx(-1.0, abs=1e-12)
    n = normalize(np.stack([a, 2 * a]))
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-6)


def test_cosine_is_clipped_to_its_range_and_refuses_mismatched_dimensions():
    tiny = [1e-300, 1e-300]
    assert -1.0 <= cosine_similarity(tiny, tiny) <= 1.0
    big = [1e150, 1e150, 1e150]
    assert cosine_similarity(big, big) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="dimension"):
        cosine_similarity([1, 0, 0], [1, 0])
