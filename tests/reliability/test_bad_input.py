"""Bad input gets a specific error from the one hierarchy in hippocampus/errors.py, raised before anything
is written: every call below is checked against a snapshot of the whole collection and its history."""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from milvus_lite import DataType

from hippocampus import (
    ConfigError,
    HippocampusError,
    InvalidInput,
    Memory,
    MemoryConfig,
    SchemaMismatchError,
    StoreCorruptedError,
    StoreError,
)
from hippocampus.store import MEMORY_FIELDS
from hippocampus.store.lite_client import LiteClient
from hippocampus.testing import DeterministicEmbedder

from ._support import COUNTS

U = "bad-input-user"


def whole_state(memory: Memory) -> tuple[list[Any], int]:
    rows = memory.store.query("id >= 0", fields=MEMORY_FIELDS)
    history = memory.store.history("memory_id >= 0")
    return sorted((r["id"], r["user_id"], r["text"], repr(sorted(r["metadata"].items()))) for r in rows), len(history)


@pytest.fixture(scope="module")
def seeded(module_memory: Memory):
    mid = module_memory.add("the one memory that must not change", user_id=U, metadata={"k": "v"}).ids[0]
    return module_memory, mid


BIG = "a" * 65536
BIG_ZH = "字" * 21846  # 65,538 UTF-8 bytes
CALLS: dict[str, Callable[[Memory, int], Any]] = {
    # text
    "add-empty": lambda m, i: m.add("", user_id=U),
    "add-whitespace": lambda m, i: m.add(" \n\t\u3000 ", user_id=U),
    "add-over-65535-bytes": lambda m, i: m.add(BIG, user_id=U),
    "add-over-65535-bytes-chinese": lambda m, i: m.add(BIG_ZH, user_id=U),
    "add-messages-over-limit": lambda m, i: m.add([{"role": "user", "content": "b" * 40000}] * 2, user_id=U),
    "add-lone-surrogate": lambda m, i: m.add("bad \ud800 text", user_id=U),
    # wrong types
    "add-int": lambda m, i: m.add(123, user_id=U),
    "add-none": lambda m, i: m.add(None, user_id=U),
    "add-bytes": lambda m, i: m.add(b"bytes", user_id=U),
    "add-dict": lambda m, i: m.add({"content": "x"}, user_id=U),
    "add-empty-list": lambda m, i: m.add([], user_id=U),
    "add-blank-messages": lambda m, i: m.add([{"role": "user", "content": "  "}], user_id=U),
    "add-message-without-content": lambda m, i: m.add([{"role": "user"}], user_id=U),
    "add-message-not-dict": lambda m, i: m.add(["hello"], user_id=U),
    "add-message-role-int": lambda m, i: m.add([{"role": 1, "content": "x"}], user_id=U),
    "add-user-id-int": lambda m, i: m.add("x", user_id=5),
    "add-metadata-list": lambda m, i: m.add("x", user_id=U, metadata=["a"]),
    "add-metadata-set": lambda m, i: m.add("x", user_id=U, metadata={"k": {1, 2}}),
    "add-metadata-nan": lambda m, i: m.add("x", user_id=U, metadata={"k": float("nan")}),
    "add-metadata-over-64k": lambda m, i: m.add("x", user_id=U, metadata={"k": "m" * 70000}),
    "add-ts-string": lambda m, i: m.add("x", user_id=U, ts="yesterday"),
    "add-ts-negative": lambda m, i: m.add("x", user_id=U, ts=-1),
    "add-ts-bool": lambda m, i: m.add("x", user_id=U, ts=True),
    "add-ts-huge": lambda m, i: m.add("x", user_id=U, ts=10**15),
    # memory_type
    "add-unknown-type": lambda m, i: m.add("x", user_id=U, memory_type="skills"),
    "add-type-wrong-case": lambda m, i: m.add("x", user_id=U, memory_type="EPISODIC"),
    "search-unknown-type": lambda m, i: m.search("x", user_id=U, memory_type="working"),
    "get-all-unknown-type": lambda m, i: m.get_all(U, memory_type=3),
    # limits
    "search-limit-negative": lambda m, i: m.search("x", user_id=U, limit=-1),
    "search-limit-huge": lambda m, i: m.search("x", user_id=U, limit=10**12),
    "search-limit-1001": lambda m, i: m.search("x", user_id=U, limit=1001),
    "search-limit-string": lambda m, i: m.search("x", user_id=U, limit="5"),
    "search-limit-float": lambda m, i: m.search("x", user_id=U, limit=2.5),
    "search-limit-bool": lambda m, i: m.search("x", user_id=U, limit=True),
    # search query and filters
    "search-empty-query": lambda m, i: m.search("", user_id=U),
    "search-query-int": lambda m, i: m.search(42, user_id=U),
    "search-filter-key-injection": lambda m, i: m.search("x", user_id=U, filters={'k"] or 1==1 or metadata["k': 1}),
    "search-filter-value-list": lambda m, i: m.search("x", user_id=U, filters={"k": [1, 2]}),
    "search-filter-value-none": lambda m, i: m.search("x", user_id=U, filters={"k": None}),
    "search-filters-not-dict": lambda m, i: m.search("x", user_id=U, filters="k=v"),
    # update / delete / get / history
    "update-empty": lambda m, i: m.update(i, "", user_id=U),
    "update-over-limit": lambda m, i: m.update(i, BIG, user_id=U),
    "update-int-text": lambda m, i: m.update(i, 42, user_id=U),
    "update-bad-id": lambda m, i: m.update("abc", "x", user_id=U),
    "update-bad-metadata": lambda m, i: m.update(i, "x", user_id=U, metadata=[1]),
    "delete-negative-id": lambda m, i: m.delete(-5, user_id=U),
    "delete-float-id": lambda m, i: m.delete(1.0, user_id=U),
    "delete-id-too-big": lambda m, i: m.delete(2**64, user_id=U),
    "get-none-id": lambda m, i: m.get(None, user_id=U),
    "history-bool-id": lambda m, i: m.history(True, user_id=U),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_input_is_invalid_input_and_writes_nothing(seeded, name: str):
    memory, mid = seeded
    before = whole_state(memory)
    with pytest.raises(InvalidInput) as err:
        CALLS[name](memory, mid)
    assert isinstance(err.value, HippocampusError) and str(err.value)
    assert whole_state(memory) == before
    COUNTS["bad inputs refused before writing"] += 1


def test_text_at_the_limit_is_stored_whole(fresh_path: str):
    """65,535 UTF-8 bytes is the schema's VARCHAR limit: exactly that much is stored and read back
    unchanged (longer text is refused, never cut: the caller splits it). A hash embedder stands in
    for e5 here, whose tokenizer needs about a minute for 65 KB of text (see docs/reliability.md)."""
    with Memory(milvus_uri=fresh_path, embedder=DeterministicEmbedder(8, lexical=False, model_name="test/hash-8")) as memory:
        for text in ("a" * 65535, "字" * 21845, "😀" * 16383 + "abc"):
            assert len(text.encode()) == 65535
            mid = memory.add(text, user_id="limit-user").ids[0]
            assert memory.get(mid, user_id="limit-user").text == text


def test_limit_zero_returns_nothing(seeded):
    memory, _ = seeded
    res = memory.search("memory", user_id=U, limit=0)
    assert res.episodic == [] and res.semantic == []


# ---------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    "uri",
    ["", "   ", "ftp://example.org/x", "http://", "http://127.0.0.1:notaport", "relative/store", "/tmp/no-suffix"],
)
def test_bad_uris_are_config_errors_and_create_nothing(tmp_path: Path, uri: str, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError):
        Memory(milvus_uri=uri)
    assert list(tmp_path.iterdir()) == []


def test_unreachable_server_is_a_store_error(embedder):
    with pytest.raises(StoreError) as err:
        Memory(milvus_uri="http://127.0.0.1:9", embedder=embedder)  # the discard port: nothing listens
    assert "127.0.0.1:9" in str(err.value)


@pytest.mark.parametrize(
    "settings",
    [{"k_episodic": -1}, {"k_semantic": 10**6}, {"llm_max_retries": 0}, {"llm_timeout_s": 0}, {"no_such_setting": 1},
     {"llm_provider": "openai"}, {"embedding_provider": "openai", "embedding_base_url": "http://127.0.0.1:1/v1"},
     {"t_merge_high": 0.5, "t_amb_low": 0.6}, {"search_mode": "magic"}],
    ids=["k-negative", "k-huge", "retries-0", "timeout-0", "unknown", "llm-no-url", "emb-no-dim", "thresholds", "mode"],
)
def test_bad_settings_are_config_errors(fresh_path: str, settings: dict[str, Any]):
    with pytest.raises(ConfigError):
        Memory(milvus_uri=fresh_path, **settings)
    assert not os.path.exists(fresh_path)


@pytest.mark.parametrize("which", ["llm", "embedding"])
def test_missing_api_key_for_a_remote_provider_is_a_config_error(fresh_path: str, monkeypatch, which: str):
    for var in ("OPENAI_API_KEY", "HIPPOCAMPUS_LLM_API_KEY", "HIPPOCAMPUS_EMBEDDING_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    remote = {f"{which}_provider": "openai", f"{which}_base_url": "https://api.example.com/v1"}
    if which == "embedding":
        remote["embedding_dim"] = 8
    with pytest.raises(ConfigError) as err:
        Memory(milvus_uri=fresh_path, **remote)
    assert f"HIPPOCAMPUS_{which.upper()}_API_KEY" in str(err.value)
    assert not os.path.exists(fresh_path)  # refused before the store was touched
    # a loopback endpoint (llama.cpp, Ollama, the test stub) may go without a key; a key from the env works
    MemoryConfig(milvus_uri=fresh_path, **{**remote, f"{which}_base_url": "http://127.0.0.1:8080/v1"})
    monkeypatch.setenv(f"HIPPOCAMPUS_{which.upper()}_API_KEY", "sk-test")
    MemoryConfig(milvus_uri=fresh_path, **remote)


# ---------------------------------------------------------------- store directories
def _digest(path: str) -> dict[str, str]:
    out = {}
    for f in sorted(glob.glob(os.path.join(path, "**", "*"), recursive=True)):
        if os.path.isfile(f) and os.path.basename(f) != "LOCK":
            out[os.path.relpath(f, path)] = hashlib.sha256(Path(f).read_bytes()).hexdigest()
    return out


def _garble(pattern: str, data: bytes) -> Callable[[str], None]:
    def damage(path: str) -> None:
        files = glob.glob(os.path.join(path, pattern))
        assert files, pattern
        for f in files:
            Path(f).write_bytes(data)

    return damage


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, embedder) -> str:
    path = str(tmp_path_factory.mktemp("pristine") / "store.db")
    with Memory(milvus_uri=path, embedder=embedder) as memory:
        memory.add("precious", user_id="u")
    return path


@pytest.mark.parametrize(
    "damage",
    [
        _garble("collections/memories/schema.json", b"{not json"),
        _garble("collections/memories/manifest.json*", b"garbage"),
        _garble("collections/memories/partitions/*/data/*.parquet", b"\0" * 64),
        _garble("collections/memories/partitions/*/indexes/*", b"\1" * 16),
        _garble("collections/memories_history/schema.json", b"[]"),
    ],
    ids=["schema", "both-manifests", "data-files", "index-files", "history-schema"],
)
def test_corrupted_store_is_store_corrupted_error_and_left_as_is(pristine: str, fresh_path: str, embedder, damage):
    shutil.copytree(pristine, fresh_path)
    damage(fresh_path)
    before = _digest(fresh_path)
    with pytest.raises(StoreCorruptedError) as err:
        Memory(milvus_uri=fresh_path, embedder=embedder)
    assert fresh_path in str(err.value) and "backup" in str(err.value)
    assert _digest(fresh_path) == before  # nothing written over the evidence
    # restoring the backup works in this same process: the failed open released the lock
    shutil.rmtree(fresh_path)
    shutil.copytree(pristine, fresh_path)
    with Memory(milvus_uri=fresh_path, embedder=embedder) as memory:
        assert [r.text for r in memory.get_all("u")] == ["precious"]
    COUNTS["corrupted stores refused"] += 1


def test_a_directory_that_is_not_a_store_is_refused(tmp_path: Path, embedder):
    path = tmp_path / "notes.db"
    path.mkdir()
    (path / "thesis.txt").write_text("do not touch")
    with pytest.raises(StoreCorruptedError):
        Memory(milvus_uri=str(path), embedder=embedder)
    assert sorted(p.name for p in path.iterdir()) == ["thesis.txt"]
    file_path = tmp_path / "file.db"
    file_path.write_text("a milvus-lite 2.x file, or anything else")
    with pytest.raises(SchemaMismatchError):
        Memory(milvus_uri=str(file_path), embedder=embedder)
    assert file_path.read_text() == "a milvus-lite 2.x file, or anything else"


def test_a_collection_half_created_by_a_killed_process_is_recovered(fresh_path: str, embedder):
    """milvus-lite creates a collection's directory, then writes schema.json (tmp + rename); a SIGKILL
    in between used to leave a store that could never be opened again ("File exists")."""
    with Memory(milvus_uri=fresh_path, embedder=embedder) as memory:
        memory.add("kept", user_id="u")
    half = Path(fresh_path) / "collections" / "second"
    half.mkdir()
    (half / "schema.json.tmp").write_text('{"collection_na')  # what the kill leaves behind
    with Memory(milvus_uri=fresh_path, embedder=embedder, collection_name="second") as memory:
        memory.add("works", user_id="u")
        assert [r.text for r in memory.get_all("u")] == ["works"]
    with Memory(milvus_uri=fresh_path, embedder=embedder) as memory:
        assert [r.text for r in memory.get_all("u")] == ["kept"]


# ---------------------------------------------------------------- incompatible stores and dimensions
class _Liar(DeterministicEmbedder):
    """Declares 16 dimensions and returns 8: an embedder whose model changed under its config."""

    @property
    def dim(self) -> int:
        return 16


def test_embedding_dimension_or_model_mismatch_is_refused(fresh_path: str, embedder):
    with Memory(milvus_uri=fresh_path, embedder=embedder) as memory:
        memory.add("made with e5", user_id="u")
    before = _digest(fresh_path)
    with pytest.raises(SchemaMismatchError) as err:
        Memory(milvus_uri=fresh_path, embedder=DeterministicEmbedder(8, lexical=False, model_name="test/hash-8"))
    assert "8-d" in str(err.value) and str(embedder.dim) in str(err.value)
    with pytest.raises(SchemaMismatchError):  # same dimension, another model: similarities would be meaningless
        Memory(milvus_uri=fresh_path, embedder=DeterministicEmbedder(embedder.dim, lexical=False, model_name="other/model"))
    assert _digest(fresh_path) == before
    with Memory(milvus_uri=fresh_path, embedder=embedder) as memory:  # the right embedder still opens it
        assert [r.text for r in memory.get_all("u")] == ["made with e5"]


def test_embedder_returning_the_wrong_dimension_writes_nothing(fresh_path: str):
    liar = _Liar(8, model_name="test/liar")  # says 16, returns 8
    with Memory(milvus_uri=fresh_path, embedder=liar) as memory:
        with pytest.raises(SchemaMismatchError):
            memory.add("x", user_id="u")
        assert memory.store.count("") == 0
        assert memory.store.history("memory_id >= 0") == []


def test_collection_of_another_schema_is_refused(fresh_path: str, embedder):
    client = LiteClient(fresh_path)
    schema = client.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=embedder.dim)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection("memories", schema=schema, index_params=index)
    client.close()  # the last client of the path: milvus-lite's directory lock is released
    with pytest.raises(SchemaMismatchError) as err:
        Memory(milvus_uri=fresh_path, embedder=embedder)
    assert "not created by this version" in str(err.value)
