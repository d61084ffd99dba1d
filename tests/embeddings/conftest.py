"""The embedder tests measure the model itself: a plain OfflineEmbedder here, not the suite's
remembering one (tests/conftest.py), so that "same text, same vector" is computed twice."""

from __future__ import annotations

import pytest

from hippocampus.embeddings import OfflineEmbedder


@pytest.fixture(scope="session")
def embedder() -> OfflineEmbedder:
    return OfflineEmbedder()
