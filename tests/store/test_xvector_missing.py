"""Memories without a cross vector are reported and repaired (issue 56): a process killed between a
memory's write and its companion row's (store/xvector.py) leaves the memory without one; `stats` counts
such memories ("without_cross_vector", per user or store-wide) and `reembed --crosslang` fills them."""

from __future__ import annotations

import re
import secrets
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from hippocampus import Memory
from hippocampus.embeddings.crosslang import make_crosslang
from hippocampus.server.app import create_app
from hippocampus.server.auth import KeyRing
from hippocampus.store import filters as F
from hippocampus.store.reembed import reembed_store

QUESTION = "我对哪种药过敏？"
ANSWER = "I'm allergic to penicillin; it gave me hives when I was a kid."
OTHERS = ["我女儿在学钢琴，每周六上课。", "我对芒果有点过敏，吃了嘴巴会痒。"]


def test_memories_without_a_cross_vector_are_counted_and_reembed_fills_them(tmp_path: Path, embedder) -> None:
    uri, name = str(tmp_path / "m.db"), f"x_{uuid.uuid4().hex[:8]}"
    with Memory(milvus_uri=uri, collection_name=name, embedder=embedder) as m:
        ids = m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
        m.add("I'm allergic to penicillin too.", user_id="bob", infer=False)
        assert m.stats()["without_cross_vector"] == 0
        # what a kill between the memories' insert and their companion rows leaves
        m.store.client.delete(m.store.cross.name, filter=F.in_("id", ids[:2]))
        assert m.stats()["without_cross_vector"] == 2
        # ... and a kill between a memory's delete and its row's: a row without a memory, which the count sees through
        m.store.client.delete(m.store.collection, filter=F.in_("id", [ids[2]]))
        assert m.stats()["without_cross_vector"] == 2
        assert m.stats("mei")["without_cross_vector"] == 2 and m.stats("bob")["without_cross_vector"] == 0
        assert m.stats("nobody")["without_cross_vector"] == 0
        assert _ui_count(m, "mei") == (2, True) and _ui_count(m, "bob") == (0, False)  # the UI's stats page says so too
    report = reembed_store(uri, name, embedder, crosslang=make_crosslang("use-multilingual"), progress=lambda _: None)
    assert (report.embedded, report.resumed) == (2, 1)
    with Memory(milvus_uri=uri, collection_name=name, embedder=embedder) as m:
        assert m.stats()["without_cross_vector"] == 0
        assert ANSWER in [h.text for h in m.search(QUESTION, user_id="mei", limit=3).all]


def test_a_store_without_cross_vectors_reports_none(shared_db: Path, embedder) -> None:
    with Memory(milvus_uri=str(shared_db), collection_name=f"x_{uuid.uuid4().hex[:8]}", embedder=embedder,
                crosslang_embedder=None) as m:
        m.add("I moved to Berlin in May", user_id="alice", infer=False)
        assert "without_cross_vector" not in m.stats()


def _ui_count(m: Memory, user: str) -> tuple[int, bool]:
    """The Web UI's stats page of `user`: its count of memories without a cross vector, and whether it says
    how to fill them."""
    key = secrets.token_urlsafe(32)
    app = create_app(m, KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{key}=*"}), mcp=False, close_memory=False)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        page = client.get(f"/ui/users/{user}/stats", headers={"X-API-Key": key})
    assert page.status_code == 200
    found = re.search(r'<tr id="crossless"><td>without a cross-language vector</td><td>(\d+)</td>', page.text)
    assert found, "the stats page shows the count"
    return int(found.group(1)), "reembed --crosslang" in page.text
