"""Tenant isolation through the service: 1,200 generated (key, user id, verb) requests through the Client
into the app in-process (its transport seam: the same app, guard and auth as under uvicorn, no socket). A key never reads or changes a memory of a user it is not bound to (every such request is a
404 worded like a missing memory), nor another user's memory through its own user id; afterwards
every memory and its history are exactly as planted."""

from __future__ import annotations

import random
import uuid

import pytest

from hippocampus import Client, Memory, NotFound
from hippocampus.server import KeyRing, create_app
from hippocampus.server.auth import _entry
from tests.service_support import IN_PROCESS_URL, in_process

COMBINATIONS = 1200
_STRONG = ("U4YzDuPr6F0-MUAzJvtQKKudmyOQ8-1H", "Hq7vR2mXk9LpT4wZc8NbY3sJd6FgA1eQ", "pW5tLx2KcR8vNm4QbZ7yJh3DfS9gTa6E",
           "Zm3Qw8RtYb5LkN2vXc7HpJ4sGd9FaE6u")  # keys need 128 bits of entropy (auth.key_bits)
TENANTS = {f"tenant-{t}-{_STRONG[t]}": [f"t{t}-user-a", f"t{t}-user-b"] for t in range(4)}
UNBOUND = ["nobody-holds-me", "admin"]  # users no tenant key may touch
ALL_USERS = [u for users in TENANTS.values() for u in users] + UNBOUND


def _snapshot(memory: Memory) -> dict[int, tuple]:
    out = {}
    for user in ALL_USERS:
        for r in memory.get_all(user):
            out[r.id] = (r.user_id, r.text, r.hit_count, r.ts, tuple(sorted((k, str(v)) for k, v in r.metadata.items())),
                         len(memory.history(r.id, user)))
    return out


@pytest.fixture(scope="module")
def world(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"iso_{uuid.uuid4().hex[:10]}", embedder=embedder)
    ids = memory.add_many([{"text": f"{u} keeps secret number {n} in the drawer", "user_id": u, "ts": 1_700_000_000 + n}
                           for u in ALL_USERS for n in range(2)])
    owner = dict(zip(ids, [u for u in ALL_USERS for _ in range(2)]))
    keys = KeyRing.load(env={"HIPPOCAMPUS_API_KEYS": ";".join(f"{k}={','.join(v)}" for k, v in TENANTS.items())})
    with in_process(create_app(memory, keys, mcp=False, close_memory=False)) as transport:
        yield transport, memory, owner
    memory.close()


def _forbidden_call(client: Client, verb: str, user: str, mid: int) -> None:
    """Any verb, writes and store-wide ones included, for a user the key may not touch."""
    calls = {
        "get": lambda: client.get(mid, user), "history": lambda: client.history(mid, user),
        "search": lambda: client.search("secret number", user), "page": lambda: client.page(user),
        "update": lambda: client.update(mid, "overwritten", user_id=user), "delete": lambda: client.delete(mid, user),
        "mark_used": lambda: client.mark_used([mid], user, context="user: hi"), "reset": lambda: client.reset(user),
        "add": lambda: client.add("planted by a stranger", user), "consolidate": lambda: client.consolidate(user),
        "stats": lambda: client.stats(user), "add_many": lambda: client.add_many([{"text": "x", "user_id": user}]),
        "observe": lambda: client.observe("user: hi\nassistant: hello", user, shown=[mid]),
    }
    with pytest.raises(NotFound):
        calls[verb]()


def test_no_request_crosses_tenants(world):
    transport, memory, owner = world
    before = _snapshot(memory)
    rng = random.Random(20261125)
    clients = {k: Client(IN_PROCESS_URL, api_key=k, transport=transport) for k in TENANTS}
    verbs = ["get", "history", "search", "page", "update", "delete", "mark_used", "reset", "add", "consolidate", "stats", "add_many",
             "observe"]
    counted = {"forbidden": 0, "own user, foreign id": 0, "allowed reads": 0}
    try:
        for _ in range(COMBINATIONS):
            key = rng.choice(list(TENANTS))
            client, mine = clients[key], TENANTS[key]
            kind = rng.random()  # ~60% a foreign user, ~20% a foreign id, ~20% its own memories
            user = rng.choice([u for u in ALL_USERS if u not in mine] if kind < 0.6 else mine)
            mid = rng.choice([i for i, u in owner.items() if (u == user) == (kind >= 0.8)] if kind >= 0.6 else list(owner))
            if user not in mine:
                _forbidden_call(client, rng.choice(verbs), user, mid)
                counted["forbidden"] += 1
            elif owner[mid] != user:  # its own user id, someone else's memory id
                verb = rng.choice(["get", "history", "update", "delete", "mark_used", "observe"])
                if verb == "observe":  # a foreign id is never shown to the monitor, and said so
                    seen = client.observe("user: hi\nassistant: hello", user, shown=[mid])
                    assert seen.refused == [f"memory {mid} not found for this user; not shown"] and not seen.used
                else:
                    _forbidden_call(client, verb, user, mid)
                counted["own user, foreign id"] += 1
            else:  # allowed: reads see this user's memories only
                assert client.get(mid, user).user_id == user
                hits = client.search("secret number drawer", user, limit=5)
                assert hits.episodic and all(h.memory.user_id == user for h in hits.all)
                assert {r.user_id for r in client.page(user).items} == {user}
                assert client.stats(user)["total"] == 2
                counted["allowed reads"] += 1
    finally:
        for c in clients.values():
            c.close()
    assert sum(counted.values()) == COMBINATIONS and min(counted.values()) > 50, counted
    assert _snapshot(memory) == before  # nothing read-only changed, nothing forbidden happened
    assert memory.stats()["total"] == len(owner)


AGENT_KEYS = {f"agent-{a}-{_STRONG[i]}": a for i, a in enumerate(("planner", "coder", "writer"))}  # each bound to one agent
AGENT_COMBINATIONS = 150


def test_no_request_crosses_agents(world):
    """Keys bound to one agent of the same user (docs/agents.md): 150 generated (key, verb, memory) requests. A key
    never reads, changes or deletes another agent's own memory (404 worded like a missing one), names another
    agent (404), nor reaches a whole-user verb; its reads see its own and the shared memories only."""
    _transport, memory, _owner = world
    user = "t0-user-a"
    mine = {a: [memory.add(f"{a} keeps a private note {n}", user, agent_id=a).ids[0] for n in range(2)] for a in AGENT_KEYS.values()}
    shared = memory.add("a shared note about the drawer", user).ids[0]
    agent_of = {i: a for a, ids in mine.items() for i in ids} | {shared: None}
    keys = KeyRing([_entry(k, [user], a, agents=[a]) for k, a in AGENT_KEYS.items()])
    before = {r.id: (r.text, r.metadata.get("agent_id")) for r in memory.get_all(user)}
    rng = random.Random(20261126)
    counted = {"foreign agent": 0, "own or shared": 0, "reads": 0}
    with in_process(create_app(memory, keys, mcp=False, ui=False, close_memory=False)) as transport:
        clients = {k: Client(IN_PROCESS_URL, api_key=k, transport=transport) for k in AGENT_KEYS}
        try:
            for _ in range(AGENT_COMBINATIONS):
                key = rng.choice(list(AGENT_KEYS))
                client, agent = clients[key], AGENT_KEYS[key]
                mid = rng.choice(list(agent_of))
                kind = rng.random()
                if kind < 0.3:  # reads: never another agent's
                    scope = rng.choice(["own", "shared", "both"])
                    seen = {h.memory.id for h in client.search("private note drawer", user, limit=50, agent_scope=scope).all}
                    seen |= {r.id for r in client.page(user, agent_scope=scope).items}
                    assert seen and all(agent_of.get(i) in (agent, None) for i in seen)
                    counted["reads"] += 1
                elif agent_of[mid] not in (agent, None):
                    verb = rng.choice(["get", "history", "update", "delete", "name", "export"])
                    with pytest.raises(NotFound):
                        {"get": lambda: client.get(mid, user), "history": lambda: client.history(mid, user),
                         "update": lambda: client.update(mid, "overwritten", user_id=user), "delete": lambda: client.delete(mid, user),
                         "name": lambda: client.search("note", user, agent_id=agent_of[mid]),
                         "export": lambda: client.export_md(user)}[verb]()
                    counted["foreign agent"] += 1
                else:
                    assert client.get(mid, user).id == mid and client.history(mid, user)
                    counted["own or shared"] += 1
        finally:
            for c in clients.values():
                c.close()
    assert sum(counted.values()) == AGENT_COMBINATIONS and min(counted.values()) > 20, counted
    assert {r.id: (r.text, r.metadata.get("agent_id")) for r in memory.get_all(user)} == before
    for i in agent_of:
        memory.delete(i, user)  # the module's other test counts this user's memories
