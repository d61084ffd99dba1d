"""agent_id and run_id on every face (library, REST, Client, MCP, CLI): a memory written with an agent
belongs to that agent within its user; reads take a scope (own, shared, both); run_id is recorded and
filterable; consolidation never judges a pair across agents; a key bound to an agent never reaches
another agent's memories (docs/agents.md)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from hippocampus import Client, InvalidInput, Memory, NotFound
from hippocampus.cli.app import app as cli_app
from hippocampus.consolidation import rules as R
from hippocampus.models import MemoryRecord
from hippocampus.server.app import create_app
from hippocampus.server.auth import KeyRing, _entry
from hippocampus.store import agents as A
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import merge_union, scripted_chat
from tests.service_support import served

OPERATOR = "op-Qm7vT2xLp9RkW4nZc8HbYd3FsJ6gAe1U"
PLANNER_KEY = "planner-Vn4cX8wKt2PqL7mRz9HdGy5BjS3fEa6N"
T0 = 1_767_225_600


@pytest.fixture(scope="module")
def memory(shared_db: Path, embedder: Any) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"agents_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


@pytest.fixture(scope="module")
def url(memory: Memory) -> Iterator[str]:
    planner = _entry(PLANNER_KEY, ["alice"], "planner", agents=["planner"])
    keys = KeyRing([_entry(OPERATOR, "*", "operator"), planner])
    with served(create_app(memory, keys, ui=False, close_memory=False)) as base:
        yield base


def plant(memory: Memory) -> tuple[str, dict[str, int]]:
    """A new user with one memory of the planner (run r1), one of the coder and one shared; (user, ids)."""
    user = f"u{uuid.uuid4().hex[:8]}"
    ids = {
        "planner": memory.add("prefers short plans over coffee", user, agent_id="planner", run_id="r1").ids[0],
        "coder": memory.add("prefers tabs over spaces with coffee", user, agent_id="coder", run_id="r2").ids[0],
        "shared": memory.add("drinks coffee every morning", user).ids[0],
    }
    return user, ids


def found(result: Any) -> set[int]:
    return {h.memory.id for h in result.all}


SCOPES = {"own": {"planner"}, "shared": {"shared"}, "both": {"planner", "shared"}}


# ---------------------------------------------------------------------- the library
def test_scopes_on_every_read_verb_of_the_library(memory: Memory):
    user, ids = plant(memory)
    for scope, names in SCOPES.items():
        want = {ids[n] for n in names}
        assert found(memory.search("coffee", user, agent_id="planner", agent_scope=scope)) == want, scope
        assert {r.id for r in memory.get_all(user, agent_id="planner", agent_scope=scope)} == want, scope
        assert memory.page(user, agent_id="planner", agent_scope=scope).total == len(want)
        block = memory.context(user, agent_id="planner", agent_scope=scope, min_score=0)
        assert ("short plans" in block, "tabs" in block, "every morning" in block) == (
            "planner" in names, False, "shared" in names), scope
    assert {r.id for r in memory.get_all(user)} == set(ids.values())  # no agent named: every memory of the user
    assert {r.id for r in memory.get_all(user, agent_scope="shared")} == {ids["shared"]}
    assert memory.get(ids["coder"], user).metadata[A.AGENT_KEY] == "coder"


def test_run_id_is_recorded_and_filterable_and_agent_id_is_a_filter_field(memory: Memory):
    user, ids = plant(memory)
    assert found(memory.search("coffee", user, run_id="r1")) == {ids["planner"]}
    assert {r.id for r in memory.get_all(user, filters={"run_id": {"in": ["r1", "r2"]}})} == {ids["planner"], ids["coder"]}
    assert {r.id for r in memory.get_all(user, filters={"agent_id": {"ne": "coder"}})} == {ids["planner"], ids["shared"]}
    assert {r.id for r in memory.get_all(user, filters={"agent_id": {"exists": False}})} == {ids["shared"]}
    assert {r.id for r in memory.get_all(user, filters={"OR": [{"agent_id": "coder"}, {"run_id": "r1"}]})} == {ids["planner"], ids["coder"]}
    # the caller's filter can never widen the scope: it is ANDed to it
    assert memory.get_all(user, agent_id="planner", agent_scope="own", filters={"agent_id": "coder"}) == []


def test_bad_agent_arguments_are_refused_and_nothing_is_written(memory: Memory):
    user = f"u{uuid.uuid4().hex[:8]}"
    for bad in ("", "  ", "a\x00b", "x" * 129, 7):
        with pytest.raises(InvalidInput, match="agent_id"):
            memory.add("text", user, agent_id=bad)
        with pytest.raises(InvalidInput, match="run_id"):
            memory.search("text", user, run_id=bad)
    with pytest.raises(InvalidInput, match="agent_scope"):
        memory.get_all(user, agent_id="a", agent_scope="mine")
    with pytest.raises(InvalidInput, match="needs an agent_id"):
        memory.search("text", user, agent_scope="own")
    with pytest.raises(InvalidInput, match="written by hippocampus itself"):
        memory.add("spoofed", user, metadata={"agent_id": "planner"})
    with pytest.raises(InvalidInput, match="agent_id"):
        memory.add_many([{"text": "ok", "user_id": user}, {"text": "bad", "user_id": user, "agent_id": ""}])
    assert memory.get_all(user) == []


def test_a_memory_written_before_agents_is_shared(memory: Memory):
    user = f"u{uuid.uuid4().hex[:8]}"
    row = {"user_id": user, "memory_type": "episodic", "ts": T0, "chat_id": "default", "who": user, "text": "old coffee habit",
           "hit_count": 0, "metadata": {"thing": "old coffee habit"}, "vector": memory.embedder.encode(["old coffee habit"])[0].tolist()}
    (old,) = memory.store.insert([row])  # as a store written before agents has it: no agent key at all
    assert found(memory.search("coffee", user, agent_id="planner", agent_scope="shared")) == {old}
    assert memory.get_all(user, agent_id="planner", agent_scope="own") == []


def test_observe_adds_as_the_agent_and_never_shows_it_another_agents_memory(memory: Memory):
    user, ids = plant(memory)
    seen = memory.observe("user: Remember that I love green tea\nassistant: noted", user, shown=[ids["coder"], ids["shared"]],
                          agent_id="planner", run_id="r3")
    assert seen.refused == [f"memory {ids['coder']} not found for this user; not shown"] and len(seen.added) == 1
    added = memory.get(seen.added[0], user).metadata
    assert (added[A.AGENT_KEY], added[A.RUN_KEY]) == ("planner", "r3")


# ---------------------------------------------------------------------- consolidation
def _record(agent: str | None, mid: int) -> MemoryRecord:
    meta = A.stamp({}, agent, None)
    return MemoryRecord(id=mid, user_id="u", memory_type="episodic", ts=T0, chat_id="c", who="u", text="t", metadata=meta)


def test_the_consolidation_rule_never_pairs_two_agents_or_an_agent_with_shared():
    assert R.pair_considered(_record("a", 1), _record("a", 2)) and R.pair_considered(_record(None, 1), _record(None, 2))
    for x, y in (("a", "b"), ("a", None), (None, "b")):
        assert not R.pair_considered(_record(x, 1), _record(y, 2))
        assert R.merge_allowed(_record(x, 1), _record(y, 2))[0] is False


def test_consolidation_merges_within_an_agent_never_across(shared_db: Path):
    fact = lambda _i: '{"facts": [{"fact": "we booked the train to Lyon"}]}'  # noqa: E731 - every episode states it
    chat = scripted_chat({"MergeResult": merge_union, "SemanticExtraction": fact})  # "same event" to every pair shown
    m = Memory(milvus_uri=str(shared_db), collection_name=f"agc_{uuid.uuid4().hex[:10]}", embedder=DeterministicEmbedder(8, lexical=False),
               llm=chat, t_merge_high=0.85, t_amb_low=0.65)
    try:
        user, text = "alice", "we booked the train to Lyon"
        items = [{"text": text, "user_id": user, "ts": T0 + i, **({"agent_id": a} if a else {})}
                 for i, a in enumerate(["planner", "planner", "coder", None])]
        m.add_many(items)
        stats = m.consolidate(user_id=user)
        left = m.get_all(user, memory_type="episodic")
        facts = m.get_all(user, memory_type="semantic")  # one per agent and one shared: never deduplicated across
        assert sorted(str(A.agent_of(r.metadata)) for r in facts) == ["None", "coder", "planner"]
        assert stats.merged == 1  # the planner's two: the control that the merger would merge anything it is shown
        assert sorted(str(A.agent_of(r.metadata)) for r in left) == ["None", "coder", "planner"]
        shown = [(p.inputs["memory_a"]["id"], p.inputs["memory_b"]["id"]) for p in chat.prompts if "memory_a" in p.inputs]
        assert len(shown) == 1  # no pair across agents ever reached the model (merge or separation)
    finally:
        m.close()


# ---------------------------------------------------------------------- REST, the Client, a key bound to an agent
def test_client_and_rest_carry_the_scopes(memory: Memory, url: str):
    user, ids = plant(memory)
    with Client(url, api_key=OPERATOR) as client:
        for scope, names in SCOPES.items():
            want = {ids[n] for n in names}
            assert found(client.search("coffee", user, agent_id="planner", agent_scope=scope)) == want
            assert {r.id for r in client.get_all(user, agent_id="planner", agent_scope=scope)} == want
        assert "short plans" in client.context(user, agent_id="planner", agent_scope="own", min_score=0)
        new = client.add("plans trips on Sundays", user, agent_id="planner", run_id="r9").ids[0]
        assert client.page(user, run_id="r9").items[0].id == new
    headers = {"Authorization": f"Bearer {OPERATOR}"}
    bad = httpx.post(url + "/v1/search", headers=headers, json={"query": "x", "user_id": user, "agent_scope": "all"})
    assert bad.status_code == 422 and "agent_scope" in bad.json()["error"]["message"]


def test_a_key_bound_to_an_agent_never_reaches_another_agents_memories(memory: Memory, url: str):
    user = "alice"
    ids = {n: memory.add(t, user, agent_id=a).ids[0] for n, t, a in (
        ("planner", "alice's planner notes coffee", "planner"), ("coder", "alice's coder notes coffee", "coder"),
        ("shared", "alice likes coffee", None))}
    before = {r.id: r.text for r in memory.get_all(user)}
    with Client(url, api_key=PLANNER_KEY) as client:
        written = client.add("a plan for alice's coffee", user).ids[0]  # no agent named: the key's own
        assert memory.get(written, user).metadata[A.AGENT_KEY] == "planner"
        seen = found(client.search("coffee", user, limit=50))
        assert ids["coder"] not in seen and {ids["planner"], ids["shared"], written} <= seen
        assert ids["coder"] not in {r.id for r in client.get_all(user, agent_scope="both")}
        assert "coder notes" not in client.context(user, min_score=0)
        assert client.get(ids["shared"], user).id == ids["shared"]
        for call in (lambda: client.get(ids["coder"], user), lambda: client.update(ids["coder"], "x", user_id=user),
                     lambda: client.delete(ids["coder"], user), lambda: client.history(ids["coder"], user),
                     lambda: client.search("coffee", user, agent_id="coder"), lambda: client.add("x", user, agent_id="coder"),
                     lambda: client.page(user, agent_id="coder", agent_scope="own"), lambda: client.export_md(user),
                     lambda: client.reset(user), lambda: client.delete_many([ids["coder"]], user)):
            with pytest.raises(NotFound):
                call()
    after = {r.id: r.text for r in memory.get_all(user) if r.id != written}
    assert after == before  # the coder's memory, and every other, exactly as planted


# ---------------------------------------------------------------------- MCP and the CLI
def test_mcp_tools_take_the_agent_and_a_bound_key_stays_within_it(memory: Memory, url: str):
    user, ids = plant(memory)

    async def talk(key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
        with anyio.fail_after(60):
            async with http, McpClient(streamable_http_client(url + "/mcp", http_client=http)) as client:
                return [await client.call_tool(name, args) for name, args in calls]

    own, listed, added = anyio.run(talk, OPERATOR, [
        ("search_memory", {"query": "coffee", "user_id": user, "agent_id": "planner", "agent_scope": "own"}),
        ("list_memories", {"user_id": user, "agent_id": "planner", "agent_scope": "shared"}),
        ("add_memory", {"text": "planner saw a new cafe", "user_id": user, "agent_id": "planner", "run_id": "r5"})])
    assert {m["id"] for m in own.structured_content["memories"]} == {ids["planner"]}
    assert [i["id"] for i in listed.structured_content["items"]] == [ids["shared"]]
    assert memory.get(added.structured_content["ids"][0], user).metadata[A.RUN_KEY] == "r5"
    coder = memory.add("alice's coder secret", "alice", agent_id="coder").ids[0]
    got, hits = anyio.run(talk, PLANNER_KEY, [("get_memory", {"memory_id": coder, "user_id": "alice"}),
                                              ("search_memory", {"query": "coder secret", "user_id": "alice"})])
    assert got.is_error and got.content[0].text == f"NotFound: memory {coder} not found for this user"
    assert coder not in {m["id"] for m in hits.structured_content["memories"]}


def test_cli_takes_agent_run_and_scope(memory: Memory, url: str):
    user, ids = plant(memory)

    def cli(*args: str) -> Any:
        result = CliRunner(env={"COLUMNS": "200", "HIPPOCAMPUS_API_KEY": OPERATOR}).invoke(cli_app, ["--server", url, *args])
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    added = cli("add", "coder fixed the build", "-u", user, "--agent", "coder", "--run", "r7", "--json")["ids"][0]
    assert memory.get(added, user).metadata[A.AGENT_KEY] == "coder"
    listed = cli("list", "-u", user, "--agent", "coder", "--agent-scope", "own", "--json")
    assert {r["id"] for r in listed} == {ids["coder"], added}
    assert {r["id"] for r in cli("list", "-u", user, "--run", "r7", "--json")} == {added}
    hits = cli("search", "coffee", "-u", user, "--agent", "planner", "--agent-scope", "shared", "--json")
    assert {h["id"] for kind in ("episodic", "semantic") for h in hits.get(kind, [])} == {ids["shared"]}
    assert "short plans" in cli("context", "-u", user, "--agent", "planner", "--min-score", "0", "--json")["context"]


def test_the_web_ui_filters_by_agent(memory: Memory):
    user, ids = plant(memory)
    with served(create_app(memory, KeyRing(), mcp=False, close_memory=False)) as base:  # an open loopback server: no login
        page = httpx.get(f"{base}/ui/users/{user}/memories", params={"agent_id": "coder"}, follow_redirects=True)
        everything = httpx.get(f"{base}/ui/users/{user}/memories", follow_redirects=True)
    assert page.status_code == 200 and "tabs over spaces" in page.text and "short plans" not in page.text
    assert 'name="agent_id" value="coder"' in page.text
    assert "short plans" in everything.text and "tabs over spaces" in everything.text


def test_a_keys_file_binds_a_key_to_agents(tmp_path: Path):
    from hippocampus import ConfigError

    (tmp_path / "keys.yaml").write_text(f"keys:\n  - name: planner-bot\n    key: {PLANNER_KEY}\n    users: [alice]\n"
                                        f"    agents: [planner]\n  - key: {OPERATOR}\n    users: '*'\n", encoding="utf-8")
    ring = KeyRing.load(tmp_path / "keys.yaml", env={})
    bot, operator = ring.resolve(PLANNER_KEY), ring.resolve(OPERATOR)
    assert bot.agents == frozenset({"planner"}) and operator.agents is None
    assert bot.check_agent("alice", None, "gone") == "planner" and operator.check_agent("alice", "coder", "gone") == "coder"
    with pytest.raises(NotFound, match="^gone$"):
        bot.check_agent("alice", "coder", "gone")
    (tmp_path / "bad.yaml").write_text(f"keys:\n  - key: {PLANNER_KEY}\n    users: [alice]\n    agents: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="agents must be a non-empty list"):
        KeyRing.load(tmp_path / "bad.yaml", env={})
