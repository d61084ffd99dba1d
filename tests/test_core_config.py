"""MemoryConfig: keyword arguments > HIPPOCAMPUS_* environment > hippocampus.yaml > defaults; secrets only
from the environment; per-model thresholds; bad settings are ConfigError through Memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hippocampus import ConfigError, Memory, MemoryConfig
from hippocampus.config import DEFAULT_THRESHOLDS
from hippocampus.embeddings.offline import MODEL_NAME
from hippocampus.memory import load_config


@pytest.fixture
def clean_env(monkeypatch):
    """No HIPPOCAMPUS_* setting or OpenAI key from the developer's shell leaks into these tests."""
    import os

    for key in list(os.environ):
        if key.startswith("HIPPOCAMPUS_") and key != "HIPPOCAMPUS_HOME" or key == "OPENAI_API_KEY":
            monkeypatch.delenv(key)
    return monkeypatch


def write_yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_local_and_offline(clean_env, tmp_path):
    clean_env.chdir(tmp_path)  # no ./hippocampus.yaml here
    cfg = MemoryConfig()
    assert cfg.is_local_store and cfg.milvus_uri.endswith("memories.db") and "://" not in cfg.milvus_uri
    assert cfg.collection_name == "memories"
    assert cfg.embedding_provider == "offline" and cfg.llm_provider == "offline"
    assert (cfg.k_semantic, cfg.k_episodic) == (5, 5)
    assert (cfg.merge_time_window_same_chat, cfg.merge_time_window_diff_chat) == (1800, 604800)
    assert cfg.llm_api_key is None and cfg.embedding_api_key is None


def test_precedence_kwargs_over_env_over_yaml_over_defaults(clean_env, tmp_path):
    path = write_yaml(tmp_path, "k_episodic: 7\nk_semantic: 6\nsearch_mode: dense\ncollection_name: from_yaml\n")
    clean_env.setenv("HIPPOCAMPUS_CONFIG", str(path))
    cfg = MemoryConfig()
    assert (cfg.k_episodic, cfg.k_semantic, cfg.search_mode, cfg.collection_name) == (7, 6, "dense", "from_yaml")
    assert cfg.llm_max_retries == 3  # untouched: the default
    clean_env.setenv("HIPPOCAMPUS_K_EPISODIC", "8")
    clean_env.setenv("HIPPOCAMPUS_SEARCH_MODE", "bm25")
    cfg = MemoryConfig()
    assert (cfg.k_episodic, cfg.k_semantic, cfg.search_mode) == (8, 6, "bm25")
    cfg = MemoryConfig(k_episodic=9)
    assert (cfg.k_episodic, cfg.k_semantic, cfg.search_mode) == (9, 6, "bm25")


def test_hippocampus_yaml_in_the_working_directory_is_read(clean_env, tmp_path):
    (tmp_path / "hippocampus.yaml").write_text("k_semantic: 11\n", encoding="utf-8")
    (tmp_path / "config.yaml").write_text("k_semantic: 13\n", encoding="utf-8")  # hippocampus.yaml comes first
    clean_env.chdir(tmp_path)
    assert MemoryConfig().k_semantic == 11
    other = write_yaml(tmp_path, "k_semantic: 12\n")
    clean_env.setenv("HIPPOCAMPUS_CONFIG", str(other))  # an explicit file wins over ./hippocampus.yaml
    assert MemoryConfig().k_semantic == 12


def test_a_config_yaml_is_read_only_when_it_says_it_is_hippocampuss(clean_env, tmp_path, caplog):
    """./config.yaml is a name other programs use (mem0's): read only as a `hippocampus:` section, or, written before
    hippocampus.yaml, when every key is a setting (with a log line to rename it); anything else is left alone."""
    clean_env.chdir(tmp_path)
    shared = tmp_path / "config.yaml"
    shared.write_text("vector_store: {provider: qdrant}\nhippocampus:\n  k_semantic: 9\n", encoding="utf-8")
    assert MemoryConfig().k_semantic == 9
    shared.write_text("k_semantic: 11\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="hippocampus.config"):
        assert MemoryConfig().k_semantic == 11
    assert "rename it hippocampus.yaml" in caplog.text
    caplog.clear()
    shared.write_text("vector_store: {provider: qdrant}\nk_semantic: 11\nversion: v1.1\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="hippocampus.config"):
        assert MemoryConfig().k_semantic == 5
    assert "not read as Hippocampus's settings" in caplog.text and "vector_store" in caplog.text
    shared.write_bytes(b"\xff\xfe x")  # another program's file, whatever it holds, never breaks start-up
    assert MemoryConfig().k_semantic == 5
    shared.write_text("hippocampus: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="section must be a mapping"):
        MemoryConfig()


@pytest.mark.parametrize("key", ["llm_api_key", "embedding_api_key"])
def test_an_api_key_in_the_yaml_is_refused(clean_env, tmp_path, key: str):
    clean_env.setenv("HIPPOCAMPUS_CONFIG", str(write_yaml(tmp_path, f"{key}: sk-secret-in-a-file\n")))
    with pytest.raises(ConfigError, match=f"HIPPOCAMPUS_{key.upper()}") as info:
        MemoryConfig()
    assert "sk-secret-in-a-file" not in str(info.value)


def test_api_keys_come_from_the_environment_and_stay_secret(clean_env):
    clean_env.setenv("HIPPOCAMPUS_LLM_API_KEY", "sk-llm")
    clean_env.setenv("OPENAI_API_KEY", "sk-openai")
    cfg = MemoryConfig()
    assert cfg.api_key("llm") == "sk-llm" and cfg.api_key("embedding") == "sk-openai"  # OPENAI_API_KEY as fallback
    assert "sk-llm" not in repr(cfg) and "sk-openai" not in str(cfg.model_dump())


@pytest.mark.parametrize("text", ["k_episodic: [unclosed\n", "- just\n- a list\n"], ids=["invalid-yaml", "not-a-mapping"])
def test_a_broken_yaml_is_a_config_error(clean_env, tmp_path, text: str):
    clean_env.setenv("HIPPOCAMPUS_CONFIG", str(write_yaml(tmp_path, text)))
    with pytest.raises(ConfigError, match="settings.yaml"):
        MemoryConfig()


def test_unknown_or_invalid_settings_are_config_errors_through_memory(clean_env, tmp_path):
    clean_env.setenv("HIPPOCAMPUS_CONFIG", str(write_yaml(tmp_path, "k_episodc: 3\n")))
    with pytest.raises(ValidationError):
        MemoryConfig()
    with pytest.raises(ConfigError, match="k_episodc"):
        load_config()
    clean_env.delenv("HIPPOCAMPUS_CONFIG")
    for bad in ({"k_episodic": -1}, {"search_mode": "fuzzy"}, {"milvus_uri": "memories.sqlite"},
                {"milvus_uri": "ftp://host/x"}, {"llm_provider": "openai"}, {"t_amb_low": 0.9, "t_merge_high": 0.8}):
        with pytest.raises(ConfigError):
            Memory(**bad)


def test_thresholds_come_from_the_per_model_table_unless_set(clean_env):
    e5 = MemoryConfig(embedding_model=MODEL_NAME)
    assert e5.merge_thresholds == (DEFAULT_THRESHOLDS[MODEL_NAME]["ambiguous"], DEFAULT_THRESHOLDS[MODEL_NAME]["merge"])
    assert e5.merge_thresholds[0] < e5.merge_thresholds[1]
    qwen = MemoryConfig(embedding_model="qwen/qwen3-embedding-4b")
    assert qwen.merge_thresholds == (0.65, 0.85)  # seed 002's values, chosen for qwen3-embedding
    assert MemoryConfig(t_merge_high=0.97).merge_thresholds == (DEFAULT_THRESHOLDS[MODEL_NAME]["ambiguous"], 0.97)
    custom = MemoryConfig(embedding_model="my/model", thresholds={"my/model": {"merge": 0.8, "ambiguous": 0.6}})
    assert custom.merge_thresholds == (0.6, 0.8)


def test_memory_kwargs_override_a_given_config(clean_env, tmp_path, embedder):
    base = MemoryConfig(milvus_uri=str(tmp_path / "a.db"), k_episodic=2)
    with Memory(base, embedder=embedder, collection_name="other") as m:
        assert m.config.k_episodic == 2 and m.config.collection_name == "other"
        assert m.config.milvus_uri == str(tmp_path / "a.db")
