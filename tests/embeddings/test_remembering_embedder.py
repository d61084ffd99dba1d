"""The suite's remembering embedder (tests/conftest.py) answers exactly what the plain model answers:
the same vectors, rows in the caller's order, repeats included, per role."""

from __future__ import annotations

import numpy as np

from hippocampus.embeddings import OfflineEmbedder
from tests.conftest import RememberingEmbedder


def test_remembered_vectors_are_the_models_own(embedder: OfflineEmbedder) -> None:
    remembering = RememberingEmbedder()
    texts = ["I like jazz", "我妹妹住在杭州", "I like jazz", "x" * 3000]
    for role in ("passage", "query"):
        first = remembering.encode(texts[:2], role=role)
        again = remembering.encode(texts, role=role)  # two remembered, one repeat, one new
        assert np.array_equal(first, again[:2]) and np.array_equal(again, embedder.encode(texts, role=role))
        assert again.dtype == np.float32 and again.flags.writeable
    assert not np.array_equal(remembering.encode(["I like jazz"], role="query"), remembering.encode(["I like jazz"]))
    assert remembering.encode([]).shape == (0, 384)
