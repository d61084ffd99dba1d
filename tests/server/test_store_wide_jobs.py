"""Store-wide jobs go on past one user's damaged data (issue 42, item 1): consolidation, decay and the
graph build over every user, from the service (its schedule, its API) and from `schedule`'s runner,
run user by user when the store-wide pass fails; the failed user is recorded in the run history and
counted, every other user is done, and the log names no user. The damage is planted in the store as
an older release or another tool could have left it (a `ts` of 2**62, an unknown memory_type).
In-process (FastAPI's TestClient on the app), real milvus-lite."""

from __future__ import annotations

import logging
import secrets
import uuid

import pytest
from fastapi.testclient import TestClient

from hippocampus import Memory
from hippocampus.consolidation.schedule import run_consolidation
from hippocampus.server import KeyRing, create_app

OPERATOR = secrets.token_urlsafe(32)
FIELDS = ["id", "user_id", "memory_type", "ts", "chat_id", "who", "text", "hit_count", "metadata", "vector"]


@pytest.fixture
def mem(shared_db, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"jobs_{uuid.uuid4().hex[:10]}", embedder=embedder, graph="on")
    m.add("I moved to Lisbon in March", user_id="alice", infer=False)
    bad = m.add("I moved to Porto in March", user_id="alice", infer=False).ids[0]
    m.add("Bob started learning the cello", user_id="bob", infer=False)
    m.add("Bob started to learn the cello", user_id="bob", infer=False)
    m.bad_id = bad  # type: ignore[attr-defined]
    m.bad_fact = m.add("Alice lives in Porto", user_id="alice", infer=False, memory_type="semantic").ids[0]  # type: ignore[attr-defined]
    yield m
    m.close()


def _damage(m: Memory, fact: bool = False, **fields) -> None:
    row = m.store.query(f"id == {m.bad_fact if fact else m.bad_id}", fields=FIELDS, limit=1)[0]  # type: ignore[attr-defined]
    m.store.upsert([{**row, **fields}])


@pytest.fixture
def client(mem: Memory):
    app = create_app(mem, KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{OPERATOR}=*"}), mcp=False, ui=False,
                     close_memory=False)
    with TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {OPERATOR}"}) as c:
        yield c


def _runs(client: TestClient) -> list[dict]:
    return client.get("/v1/stats").json()["service"]["consolidation"]["runs"]


def test_consolidation_over_every_user_records_the_failed_user_and_does_the_rest(mem, client, caplog) -> None:
    _damage(mem, ts=2**62)
    with caplog.at_level(logging.WARNING):
        answer = client.post("/v1/consolidate", json={})
    assert answer.status_code == 200 and answer.json()["errors"] == 1
    assert answer.json()["examined"] >= 2  # bob's memories were consolidated all the same
    run = _runs(client)[-1]
    assert run["outcome"] == "partial" and [f["user"] for f in run["failures"]] == ["alice"]
    assert all(r.metadata.get("distilled") for r in mem.get_all("bob"))
    assert "alice" not in caplog.text


def test_the_graph_build_over_every_user_records_the_failed_user(mem, client) -> None:
    _damage(mem, fact=True, ts=2**62)
    answer = client.post("/v1/graph/build", json={})
    assert answer.status_code == 200, answer.text
    run = _runs(client)[-1]
    assert run["step"] == "graph" and run["outcome"] == "partial" and [f["user"] for f in run["failures"]] == ["alice"]
    assert answer.json()["users"] >= 1  # bob's memories were read into the graph


@pytest.mark.parametrize("scheduled", [False, True])
def test_decay_over_every_user_passes_a_row_of_an_unknown_kind(mem, client, scheduled) -> None:
    """Such a row once failed alice's decay (recorded as a failure); now no read meets it
    (store/readable.py), so the run is whole: every other memory of alice's and bob's examined."""
    _damage(mem, memory_type="bogus")
    if scheduled:
        stats = client.app.state.consolidations.decay("decay-cron")
        assert stats is not None and stats.examined >= 2
    else:
        answer = client.post("/v1/decay", json={})
        assert answer.status_code == 200 and answer.json()["examined"] >= 2, answer.text
    run = _runs(client)[-1]
    assert run["step"] == "decay" and run["outcome"] == "ok" and not run.get("failures"), run


def test_schedules_runner_goes_user_by_user(mem) -> None:
    _damage(mem, ts=2**62)
    lines: list[str] = []
    stats = run_consolidation(mem, None, lines.append)
    assert stats.errors == 1 and stats.examined >= 2
    assert any("failed for user 'alice'" in line for line in lines) and "finished (all users)" in lines[-1]
