"""The service through its Client, in-process through the Client's transport seam (the app's lifespan
runs as under uvicorn; tests/server/test_e2e_http.py and the process tests keep the socket) over real
milvus-lite: every verb, the error classes, keys and tenants, metrics, and consolidation runs that
never overlap."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from datetime import datetime, timezone

import httpx
import pytest

from hippocampus import (
    AsyncClient,
    AuthError,
    Client,
    ConfigError,
    HistoryAction,
    InvalidInput,
    Memory,
    NotFound,
    ServiceUnavailable,
)
from hippocampus.server import KeyRing, create_app
from hippocampus.server.app import run_server
from tests.service_support import IN_PROCESS_URL, AsyncAppTransport, in_process

OPERATOR = "operator-gNuRNQQAjuqBcv08Tq2HoI6oqc9xxjY7"  # keys need 128 bits of entropy (auth.key_bits)
ALICE_KEY = "alice-xQj2UbhYM7vyEVAzrib2sAjwV4D5LL5Z"


@pytest.fixture(scope="module")
def service(shared_db, embedder):
    """One service for the module: an operator key and a key bound to alice (and carol)."""
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"svc_{uuid.uuid4().hex[:10]}", embedder=embedder)
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": f"{OPERATOR}=*;{ALICE_KEY}=alice,carol"})
    app = create_app(memory, keys, mcp=False)
    with in_process(app) as transport:
        yield transport, memory, app


def connect(transport: httpx.BaseTransport, key: str | None) -> Client:
    return Client(IN_PROCESS_URL, api_key=key, transport=transport)


@pytest.fixture
def client(service):
    with connect(service[0], OPERATOR) as c:
        yield c


def test_every_verb_through_the_client(client: Client):
    user = f"u-{uuid.uuid4().hex[:6]}"
    added = client.add("I moved to Berlin in May", user_id=user, chat_id="c1", metadata={"source": "import"}, ts=1_700_000_000)
    assert added.stored and len(added.ids) == 1
    mid = added.ids[0]
    ids = client.add_many([{"text": "I am allergic to peanuts", "user_id": user},
                           {"messages": "我喜欢喝绿茶", "user_id": user, "ts": datetime(2024, 5, 1, tzinfo=timezone.utc)}])
    assert len(ids) == 2
    record = client.get(mid, user_id=user)
    assert record.text == "I moved to Berlin in May" and record.metadata["source"] == "import" and record.ts == 1_700_000_000
    hits = client.search("moved to Berlin", user_id=user, limit=3)
    assert hits.episodic[0].id == mid
    page = client.page(user, limit=2)
    assert page.total == 3 and len(page.items) == 2 and page.next_offset == 2
    assert [r.id for r in client.get_all(user)] == [r.id for r in client.page(user, limit=10).items]
    updated = client.update(mid, "I moved to Hamburg in June", user_id=user)
    assert updated.id == mid and client.get(mid, user).text == "I moved to Hamburg in June"
    used = client.mark_used([mid], user_id=user)
    assert used[0].hit_count == 1
    actions = [e.action for e in client.history(mid, user_id=user)]
    assert actions[:2] == [HistoryAction.CREATED, HistoryAction.UPDATED] and HistoryAction.HIT in actions
    stats = client.consolidate(user_id=user)
    assert stats.examined >= 1 and stats.errors == 0
    assert client.stats(user)["total"] >= 3
    client.delete(mid, user_id=user)
    with pytest.raises(NotFound):
        client.get(mid, user_id=user)
    assert client.history(mid, user_id=user)[-1].action is HistoryAction.DELETED
    assert client.reset(user) >= 2
    assert client.get_all(user) == []


def test_errors_come_back_as_the_library_classes(client: Client):
    with pytest.raises(InvalidInput, match="empty"):
        client.add("   ", user_id="alice")
    with pytest.raises(InvalidInput):
        client.add("text", user_id=123)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        client.search("q", user_id="alice", mode="telepathy")
    with pytest.raises(InvalidInput):
        client.get("1/history", user_id="alice")  # never reaches a path it was not meant for
    with pytest.raises(InvalidInput):
        client.add("x", user_id="alice", metadata={"bad": {1, 2}})  # not JSON: refused before sending
    with pytest.raises(NotFound, match="not found for this user"):
        client.update(987654321, "new", user_id="alice")
    with pytest.raises(ServiceUnavailable):
        Client("http://127.0.0.1:9", api_key=OPERATOR).stats()


def test_async_client_has_the_same_verbs(service):
    async def run() -> None:
        async with AsyncClient(IN_PROCESS_URL, api_key=ALICE_KEY, transport=AsyncAppTransport(service[0])) as memory:
            mid = (await memory.add("async hello from alice", user_id="alice")).ids[0]
            assert (await memory.get(mid, "alice")).text == "async hello from alice"
            assert any(h.id == mid for h in (await memory.search("async hello", user_id="alice")).episodic)
            assert mid in [r.id for r in await memory.get_all("alice")]
            with pytest.raises(NotFound):
                await memory.get(mid, "bob")
            await memory.delete(mid, "alice")

    asyncio.run(run())


def test_keys_tenants_and_quiet_logs(service, caplog):
    transport, memory, _app = service
    bob_id = memory.add("bob's secret diary entry", user_id="bob").ids[0]
    caplog.set_level(logging.DEBUG)
    with connect(transport, ALICE_KEY) as alice:
        with pytest.raises(NotFound) as foreign:
            alice.get(bob_id, user_id="bob")
        with pytest.raises(NotFound) as missing:
            alice.get(10**15, user_id="alice")
        assert str(foreign.value) == f"memory {bob_id} not found for this user"
        assert str(missing.value) == f"memory {10**15} not found for this user"
        with pytest.raises(NotFound):
            alice.delete(bob_id, user_id="bob")
        with pytest.raises(NotFound):
            alice.reset("bob")
        with pytest.raises(NotFound):
            alice.consolidate(user_id="bob")
        assert "service" not in alice.stats()  # the service's own figures are the operator's
    for key in (None, "wrong-key-0123456789"):
        with connect(transport, key or "") as stranger, pytest.raises(AuthError):
            stranger.search("diary", user_id="bob")
    assert memory.get(bob_id, "bob").text == "bob's secret diary entry"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert ALICE_KEY not in logged and "wrong-key-0123456789" not in logged


def test_no_keys_means_loopback_only(monkeypatch, tmp_path):
    for var in ("HIPPOCAMPUS_API_KEY", "HIPPOCAMPUS_API_KEYS", "HIPPOCAMPUS_KEYS_FILE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="without API keys"):
        run_server("0.0.0.0", 1, milvus_uri=str(tmp_path / "never.db"))
    assert not (tmp_path / "never.db").exists()  # refused before the store was opened


def test_keys_file_and_bad_keys(tmp_path):
    good = tmp_path / "keys.yaml"
    good.write_text("keys:\n  - name: bot\n    key: bot-NzYyJoxrGv6YGWJoLcpMQ7f8zR0ip_zi\n    users: [dora]\n"
                    "  - sha256: " + ("ab" * 32) + "\n    users: '*'\n", encoding="utf-8")
    ring = KeyRing.load(good, env={})
    assert ring.resolve("bot-NzYyJoxrGv6YGWJoLcpMQ7f8zR0ip_zi").may("dora") and not ring.resolve("bot-NzYyJoxrGv6YGWJoLcpMQ7f8zR0ip_zi").may("eve")
    for text, needle in (("keys: 3\n", "'keys' list"), ("keys:\n  - key: short\n    users: '*'\n", "at least"),
                         ("keys:\n  - key: strong-WB5sceRJAgaD83n9qekSQNC92DkNP9_z\n    users: []\n", "users")):
        good.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=needle):
            KeyRing.load(good, env={})
    with pytest.raises(ConfigError, match="twice"):
        KeyRing.load(env={"HIPPOCAMPUS_API_KEY": OPERATOR, "HIPPOCAMPUS_API_KEYS": f"{OPERATOR}=a"})


def test_metrics_and_latency_table(service, client: Client):
    http = httpx.Client(base_url=IN_PROCESS_URL, transport=service[0])
    client.search("anything at all", user_id="alice")
    text = http.get("/metrics", headers={"Authorization": f"Bearer {OPERATOR}"}).text
    assert 'hippocampus_requests_total{endpoint="/v1/search",method="POST",status="200"}' in text
    assert "hippocampus_request_seconds_bucket" in text and 'hippocampus_memories{memory_type="episodic"}' in text
    assert "hippocampus_llm_calls_total" in text or "hippocampus_llm_calls" in text
    assert http.get("/metrics", headers={"Authorization": f"Bearer {ALICE_KEY}"}).status_code == 404
    table = client.stats()["service"]["endpoints"]
    assert table["POST /v1/search"]["requests"] >= 1 and table["POST /v1/search"]["p99_ms"] >= table["POST /v1/search"]["p50_ms"]
    openapi = http.get("/openapi.json", headers={"Authorization": f"Bearer {ALICE_KEY}"}).json()  # any key (docs are gated)
    assert {"/v1/memories", "/v1/search", "/v1/consolidate", "/v1/memories/{memory_id}/history"} <= set(openapi["paths"])


def test_consolidation_runs_never_overlap_and_are_recorded(service):
    transport, _memory, app = service
    jobs = app.state.consolidations
    before = len(jobs.runs)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with connect(transport, OPERATOR) as c:
                c.consolidate(user_id="alice")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    jobs.consolidate()  # the scheduler's entry point takes the same lock
    for t in threads:
        t.join()
    assert errors == []
    runs = list(jobs.runs)[before:]
    assert len(runs) == 4 and {r["trigger"] for r in runs} == {"api", "cron"}
    for first, second in zip(runs, runs[1:]):  # each started after the one before had finished
        assert second["started_at"] >= first["finished_at"]
    assert all(r["outcome"] == "ok" for r in runs)


def test_serve_with_a_cron_schedule_runs_consolidation_in_the_service(shared_db, embedder):
    import time
    from datetime import datetime, timezone

    from hippocampus.consolidation.schedule import JOB_ID

    memory = Memory(milvus_uri=str(shared_db), collection_name=f"cron_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add("I adopted a cat named Miso", user_id="fay")
    app = create_app(memory, cron="0 3 * * *", mcp=False)
    with in_process(app) as transport:
        jobs = app.state.consolidations
        assert jobs.next_run() is not None and jobs.next_run().startswith(tuple("0123456789"))
        jobs.scheduler.modify_job(JOB_ID, next_run_time=datetime.now(timezone.utc))  # as if 03:00 had come
        deadline = time.monotonic() + 60
        while not jobs.runs and time.monotonic() < deadline:
            time.sleep(0.05)
        with connect(transport, None) as client:
            runs = client.stats()["service"]["consolidation"]["runs"]
    assert runs and runs[0]["trigger"] == "cron" and runs[0]["outcome"] == "ok" and runs[0]["stats"]["examined"] == 1


def test_deferred_write_decisions_are_made_in_the_background(shared_db, embedder):
    import time

    memory = Memory(milvus_uri=str(shared_db), collection_name=f"defer_{uuid.uuid4().hex[:10]}", embedder=embedder,
                    write_decision="deferred")
    with in_process(create_app(memory, mcp=False)) as transport, connect(transport, None) as client:
        greeting = client.add("hi there!", user_id="gus", infer=True)
        assert not greeting.stored and greeting.reason.startswith("gate:")  # chitchat costs nothing, even deferred
        fact = client.add("My sister Ana moved to Lyon last week", user_id="gus", infer=True)
        assert fact.pending_decision and fact.reason.startswith("deferred")
        deadline = time.monotonic() + 60
        # the worker counts a batch just after its records are written: wait for both
        while time.monotonic() < deadline and (any(r.metadata.get("pending_decision") for r in client.get_all("gus"))
                                               or client.stats()["service"]["pending_decided"] < 1):
            time.sleep(0.1)
        records = client.get_all("gus")
        assert records and not any(r.metadata.get("pending_decision") for r in records)
        assert client.stats()["service"]["pending_decided"] == 1


def test_graph_through_the_service_is_the_users_own(service):
    """GET /v1/graph and search(graph=...) over HTTP: the library's answer, and a tenant key never
    reads another user's graph (404 in the library's words, as for a memory)."""
    transport, memory, _app = service
    memory.add("I moved to Lisbon with my sister Ana", user_id="alice")
    memory.add("My brother Tom lives in Oslo", user_id="bob")
    memory.build_graph()
    with connect(transport, ALICE_KEY) as alice:
        view = alice.graph("alice")
        assert view == memory.graph("alice") and "Lisbon" in {e.name for e in view.entities}
        assert alice.search("where does Ana's sister live?", user_id="alice", graph=True).episodic
        with pytest.raises(NotFound, match="user 'bob' not found"):
            alice.graph("bob")
        with pytest.raises(InvalidInput):
            alice.search("Lisbon", user_id="alice", graph="yes")  # type: ignore[arg-type]
    with connect(transport, OPERATOR) as operator:
        assert {e.name for e in operator.graph("bob").entities} >= {"Tom", "Oslo"}
