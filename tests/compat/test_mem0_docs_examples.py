"""mem0's documentation examples, written fresh from mem0 v3's open-source pages (quickstart, "Python SDK", "Add
memory", "Search", "Multi-scope", "Group chat", "Memory expiration"), run against the drop-in as a program written
for mem0 would run them after changing one import. Each test names the page and marks what it checks: the call
shape mem0 documents and the answer's shape and meaning, never the exact words an LLM would keep (the offline rules
decide here). One store for the module; each example uses its own user, agent or run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hippocampus.compat.mem0 import Memory

from .conftest import open_mem0

ITEM = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}
MOVIES = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."},
]


@pytest.fixture(scope="module")
def m(shared_db: Any, embedder: Any) -> Iterator[Memory]:
    memory = open_mem0(shared_db, embedder)
    yield memory
    memory.close()


def _texts(rows: list[dict]) -> list[str]:
    return sorted(r["memory"] for r in rows)


def test_quickstart_add_a_conversation(m: Memory):
    """Quickstart, "Add memories": add(messages, user_id, metadata). Checks: {"results": [...]}, each an event on a
    memory that get() then answers with the caller's metadata."""
    result = m.add(MOVIES, user_id="qs_alice", metadata={"category": "movies"})
    assert set(result) == {"results"}
    for r in result["results"]:
        assert {"id", "memory", "event"} <= set(r) and r["event"] in ("ADD", "UPDATE", "DELETE")
        if r["event"] == "ADD":
            assert m.get(r["id"])["metadata"] == {"category": "movies"}


def test_python_sdk_the_lifecycle_of_one_memory(m: Memory):
    """Python SDK: add a string, get_all, get, search, update(memory_id, data=), history, delete. Checks each
    answer's shape and that history tells ADD then UPDATE then DELETE."""
    (added,) = m.add("Likes to play cricket on weekends", user_id="sdk_alice", metadata={"category": "hobbies"},
                     infer=False)["results"]
    assert added["event"] == "ADD"
    everything = m.get_all(filters={"user_id": "sdk_alice"})
    assert [r["id"] for r in everything["results"]] == [added["id"]] and ITEM <= set(everything["results"][0])
    assert m.get(added["id"])["memory"] == "Likes to play cricket on weekends"
    related = m.search(query="What are Alice's hobbies?", filters={"user_id": "sdk_alice"}, threshold=0.0)
    assert related["results"][0]["id"] == added["id"] and isinstance(related["results"][0]["score"], float)
    assert m.update(memory_id=added["id"], data="Likes to play tennis on weekends") == \
        {"message": "Memory updated successfully!"}
    assert m.get(added["id"])["memory"] == "Likes to play tennis on weekends"
    assert m.delete(memory_id=added["id"]) == {"message": "Memory deleted successfully!"}
    history = m.history(memory_id=added["id"])
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"]
    assert (history[1]["old_memory"], history[1]["new_memory"]) == ("Likes to play cricket on weekends",
                                                                      "Likes to play tennis on weekends")


def test_add_memory_without_inference_stores_each_message(m: Memory):
    """"Add memory", infer=False: every non-system message stored as said, with its role. Checks the texts and roles."""
    result = m.add(MOVIES[:2], user_id="raw_alice", infer=False)["results"]
    assert [r["memory"] for r in result] == [MOVIES[0]["content"], MOVIES[1]["content"]]
    assert [m.get(r["id"])["role"] for r in result] == ["user", "assistant"]


def test_multi_scope_user_agent_and_run(m: Memory):
    """"Multi-scope memory": a memory under a user, an agent and a run at once; read back by any of the three
    alone or together, and delete_all by the run. Checks mem0's answer: every memory carrying the ids named."""
    m.add("Prefers aisle seats on long flights", user_id="ms_alice", agent_id="travel-assistant", run_id="session-123",
          infer=False)
    m.add("Suggest trains under four hours", agent_id="travel-assistant", infer=False)
    both = {"user_id": "ms_alice", "agent_id": "travel-assistant", "run_id": "session-123"}
    assert _texts(m.get_all(filters=both)["results"]) == ["Prefers aisle seats on long flights"]
    assert _texts(m.get_all(filters={"agent_id": "travel-assistant"})["results"]) == \
        ["Prefers aisle seats on long flights", "Suggest trains under four hours"]
    assert _texts(m.get_all(filters={"run_id": "session-123"})["results"]) == ["Prefers aisle seats on long flights"]
    found = m.search("seat preference", filters={"agent_id": "travel-assistant"}, threshold=0.0)["results"]
    assert found[0]["memory"] == "Prefers aisle seats on long flights" and found[0]["user_id"] == "ms_alice"
    m.delete_all(run_id="session-123")
    assert _texts(m.get_all(filters={"agent_id": "travel-assistant"})["results"]) == ["Suggest trains under four hours"]


def test_group_chat_each_participant_under_one_run(m: Memory):
    """"Group chat": messages with a `name` each, one run; the run alone reads every participant's memories.
    Checks actor_id from the message's name and the run's read across users."""
    for user, said in (("gc_ana", "I can only meet on Tuesdays"), ("gc_bo", "I will bring the projector")):
        m.add([{"role": "user", "name": user, "content": said}], user_id=user, run_id="group_chat_1", infer=False)
    group = m.get_all(filters={"run_id": "group_chat_1"})["results"]
    assert sorted((r["user_id"], r["actor_id"]) for r in group) == [("gc_ana", "gc_ana"), ("gc_bo", "gc_bo")]
    (hit, *_) = m.search("who brings the projector?", filters={"run_id": "group_chat_1"}, threshold=0.0)["results"]
    assert hit["actor_id"] == "gc_bo"
    assert [h["actor_id"] for h in m.history(hit["id"])] == ["gc_bo"]


def test_memory_expiration(m: Memory):
    """"Memory expiration": expiration_date on add hides the memory once past; show_expired shows it; update with
    expiration_date=None keeps it for good. Checks the dates shown and the three reads."""
    (gone,) = m.add("Staying at the Hilton until Friday", user_id="ex_alice", expiration_date="2020-01-03",
                    infer=False)["results"]
    m.add("Allergic to peanuts", user_id="ex_alice", expiration_date="2999-01-01", infer=False)
    assert _texts(m.get_all(filters={"user_id": "ex_alice"})["results"]) == ["Allergic to peanuts"]
    shown = m.get_all(filters={"user_id": "ex_alice"}, show_expired=True)["results"]
    assert sorted(r["expiration_date"] for r in shown) == ["2020-01-03", "2999-01-01"]
    m.update(gone["id"], expiration_date=None)
    assert len(m.get_all(filters={"user_id": "ex_alice"})["results"]) == 2


def test_search_threshold_and_top_k(m: Memory):
    """Search, `top_k` and `threshold`: at most top_k results, each with a score at least the threshold, best
    first. Checks the cut and the order."""
    for text in ("Loves hiking in the Alps", "Hiking boots size 42", "Works as a nurse", "Hiking with friends monthly"):
        m.add(text, user_id="th_alice", infer=False)
    top = m.search("hiking", filters={"user_id": "th_alice"}, top_k=2, threshold=0.0)["results"]
    assert len(top) == 2 and top[0]["score"] >= top[1]["score"]
    cut = top[1]["score"]
    above = m.search("hiking", filters={"user_id": "th_alice"}, threshold=cut)["results"]
    assert above and all(r["score"] >= cut for r in above)


def test_procedural_memory_of_an_agent(m: Memory):
    """"Procedural memory": add(messages, agent_id, memory_type="procedural_memory"). Checks an ADD per step kept,
    read back by the agent alone."""
    steps = [{"role": "user", "content": "Open the dashboard"}, {"role": "assistant", "content": "Filter by last week"}]
    added = m.add(steps, agent_id="pr_agent", memory_type="procedural_memory")["results"]
    assert added and all(r["event"] == "ADD" for r in added)
    assert {r["id"] for r in m.get_all(filters={"agent_id": "pr_agent"})["results"]} == {r["id"] for r in added}


def test_reset_erases_everything(mem0: Memory):
    """Python SDK, reset(): every memory of every user is gone. Checks get_all and history after it."""
    (added,) = mem0.add("A memory to erase", user_id="rs_alice", infer=False)["results"]
    mem0.add("Another", agent_id="rs_agent", infer=False)
    assert mem0.reset() is None
    assert mem0.get_all(filters={"user_id": "rs_alice"})["results"] == []
    assert mem0.get_all(filters={"agent_id": "rs_agent"})["results"] == [] and mem0.history(added["id"]) == []
