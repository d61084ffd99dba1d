"""The `hippocampus` CLI on real milvus-lite stores: every command's --json output for scripts, its
table for people, and library errors as one line with exit code 2 (caller's mistake) or 1."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app, parse_meta
from hippocampus.embeddings.offline import MODEL_NAME

runner = CliRunner(env={"COLUMNS": "200"})  # wide enough that rich never wraps a row


def cli(uri: str, *args: str, code: int = 0, input: str | None = None) -> Any:
    result = runner.invoke(app, ["--uri", uri, *args], input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def js(uri: str, *args: str) -> Any:
    return json.loads(cli(uri, *args, "--json").stdout)


def test_add_get_search_update_history_delete_roundtrip(fresh_path: str):
    added = js(fresh_path, "add", "Deployed 3-node redis cluster, config at /opt/redis/", "-u", "alice", "-c", "ops",
               "-m", "project=infra", "-m", "priority=2")
    assert added["stored"] and len(added["ids"]) == 1
    mid = str(added["ids"][0])
    js(fresh_path, "add", "我妹妹住在杭州", "-u", "alice")

    record = js(fresh_path, "get", mid, "-u", "alice")
    assert record["text"].startswith("Deployed 3-node redis") and record["chat_id"] == "ops"
    assert record["metadata"]["project"] == "infra" and record["metadata"]["priority"] == 2

    found = js(fresh_path, "search", "redis 集群的配置在哪里", "-u", "alice", "--mode", "dense")
    assert found["episodic"][0]["id"] == int(mid)
    assert 0 < found["episodic"][0]["similarity"] <= 1

    updated = js(fresh_path, "update", mid, "Redis cluster expanded to 5 nodes", "-u", "alice")
    assert updated["id"] == int(mid) and updated["text"] == "Redis cluster expanded to 5 nodes"
    events = js(fresh_path, "history", mid, "-u", "alice")
    assert [e["action"] for e in events] == ["created", "updated"]
    assert events[1]["old_text"].startswith("Deployed") and events[1]["new_text"].startswith("Redis cluster expanded")

    assert js(fresh_path, "delete", mid, "-u", "alice") == {"deleted": int(mid)}
    gone = cli(fresh_path, "get", mid, "-u", "alice", code=1)
    assert "NotFound" in gone.stderr and len(gone.stderr.strip().splitlines()) == 1
    assert [e["action"] for e in js(fresh_path, "history", mid, "-u", "alice")] == ["created", "updated", "deleted"]
    assert js(fresh_path, "stats", "-u", "alice")["total"] == 1


def test_tables_for_people(fresh_path: str):
    mid = js(fresh_path, "add", "Allergic to peanuts 🥜", "-u", "bob")["ids"][0]
    js(fresh_path, "add", "Bob likes tea", "-u", "bob", "--semantic")
    out = cli(fresh_path, "list", "-u", "bob").stdout
    assert "Allergic to peanuts" in out and "semantic" in out and "2 memories of bob" in out
    out = cli(fresh_path, "search", "what is bob allergic to", "-u", "bob").stdout
    assert "Allergic to peanuts" in out and "cosine" in out
    out = cli(fresh_path, "get", str(mid), "-u", "bob").stdout
    assert f"memory {mid}" in out and "metadata.thing" in out
    out = cli(fresh_path, "history", str(mid), "-u", "bob").stdout
    assert "created" in out
    out = cli(fresh_path, "stats").stdout
    assert "episodic" in out and "semantic" in out
    assert "nothing recalled" in cli(fresh_path, "search", "anything", "-u", "nobody").stdout


def test_other_users_memory_is_not_found_from_the_cli(fresh_path: str):
    mid = str(js(fresh_path, "add", "bob's bank PIN is 1234", "-u", "bob")["ids"][0])
    for args in (["get", mid], ["delete", mid], ["history", mid], ["update", mid, "stolen"]):
        result = cli(fresh_path, *args, "-u", "eve", code=1)
        assert "NotFound" in result.stderr
    assert js(fresh_path, "get", mid, "-u", "bob")["text"] == "bob's bank PIN is 1234"


def test_reset_asks_unless_yes(fresh_path: str):
    for i in range(3):
        js(fresh_path, "add", f"note {i}", "-u", "carol")
    js(fresh_path, "add", "dave's note", "-u", "dave")
    refused = cli(fresh_path, "reset", "-u", "carol", input="n\n", code=1)
    assert "Aborted" in refused.stdout + refused.stderr
    assert len(js(fresh_path, "list", "-u", "carol")) == 3
    assert js(fresh_path, "reset", "-u", "carol", "--yes") == {"user_id": "carol", "deleted": 3}
    assert js(fresh_path, "list", "-u", "carol") == []
    assert len(js(fresh_path, "list", "-u", "dave")) == 1


@pytest.mark.parametrize(
    "args,code,name",
    [
        (["add", "   ", "-u", "alice"], 2, "InvalidInput"),
        (["add", "text", "-u", " "], 2, "InvalidInput"),
        (["search", "q", "-u", "alice", "--type", "skills"], 2, "InvalidInput"),
        (["search", "q", "-u", "alice", "--limit", "100000"], 2, "InvalidInput"),
        (["add", "text", "-u", "alice", "-m", "novalue"], 2, "InvalidInput"),
        (["get", "123456", "-u", "alice"], 1, "NotFound"),
    ],
)
def test_library_errors_are_one_line_with_an_exit_code(fresh_path: str, args: list[str], code: int, name: str):
    result = cli(fresh_path, "--create", *args, code=code)  # a new store for a read-only command: said so
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and name in lines[0]
    assert result.stdout == ""


def test_bad_uri_is_a_config_error_with_exit_code_2(tmp_path):
    result = cli(str(tmp_path / "not-a-store.txt"), "stats", code=2)
    assert "ConfigError" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "not-a-store.txt").exists()


def test_a_file_at_the_store_path_is_a_store_error_with_exit_code_1(tmp_path):
    path = tmp_path / "memories.db"
    path.write_text("not a store")
    result = cli(str(path), "stats", code=1)
    assert "SchemaMismatchError" in result.stderr
    assert path.read_text() == "not a store"


def test_collection_option_separates_stores(fresh_path: str):
    js(fresh_path, "--collection", "work", "add", "work memory", "-u", "alice")
    assert [r["text"] for r in js(fresh_path, "--collection", "work", "list", "-u", "alice")] == ["work memory"]
    assert js(fresh_path, "list", "-u", "alice") == []  # the default collection holds nothing


def test_parse_meta_keeps_json_types():
    assert parse_meta(["a=1", "b=true", "c=hello", "d=[1, 2]", "e={\"x\": 1}", "f="]) == {
        "a": 1, "b": True, "c": "hello", "d": [1, 2], "e": {"x": 1}, "f": "",
    }


class _CheapE5Shape:
    """Random unit vectors under the offline model's name and dimension: fills a store quickly for the
    paging test, which is about the store and the CLI, not about similarity."""

    model_name = MODEL_NAME
    dim = 384

    def encode(self, texts, role="passage"):
        rng = np.random.default_rng(len(texts))
        m = rng.normal(size=(len(texts), self.dim)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_list_pages_through_everything(fresh_path: str):
    n = 1234  # more than one page of the store's 1,000-row iterator
    with Memory(milvus_uri=fresh_path, embedder=_CheapE5Shape()) as m:
        m.add_many([{"text": f"memory {i}", "user_id": "many", "ts": 1_700_000_000 + i} for i in range(n)])
        m.add("someone else's", user_id="other")
    rows = js(fresh_path, "list", "-u", "many")
    assert len(rows) == n and len({r["id"] for r in rows}) == n
    assert [r["text"] for r in rows] == [f"memory {i}" for i in range(n)]  # oldest event first
    assert js(fresh_path, "stats", "-u", "many")["total"] == n
