"""mem0's documentation examples (issue 58's conformance suite), written fresh from mem0 v3's pages: the quickstart,
"Python SDK", "Add memory", "Search", "Update", "Delete", "Memory types", "Enhanced metadata filtering", "Multi-scope",
"Group chat", "Memory expiration", "Custom instructions", "Reranker search", "Async memory", "Multimodal support"
and the v2-to-v3 migration guide. Each runs as a program written for mem0 runs after changing one import; each test
names its page and marks what it checks: the call shape mem0 documents and the answer's shape and meaning, never the
exact words an LLM would keep (the offline rules decide here), or the documented error where the drop-in differs.

One store for the module; each example uses its own user, agent or run. Where mem0ai is installed the same examples
run against mem0's own Memory (reference.py, `[mem0]` in the test id); an example that needs mem0's LLM, or shows a
documented difference, is skipped there with its reason, and an answer mem0 itself does not give as documented is
an expected failure there (`_mem0_differs`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hippocampus.compat.mem0 import Memory

from .conftest import BACKENDS, open_mem0

ITEM = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}
MOVIES = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."},
]


@pytest.fixture(scope="module", params=BACKENDS)
def m(request: Any, shared_db: Any, embedder: Any, tmp_path_factory: Any) -> Iterator[Memory]:
    """The drop-in; and mem0's own Memory where mem0ai is installed (reference.py), so each example's expected
    answer is checked against mem0 too."""
    if request.param == "mem0":
        from .reference import open_reference

        memory = open_reference(tmp_path_factory.mktemp("mem0_docs"), embedder)
    else:
        memory = open_mem0(shared_db, embedder)
    yield memory
    memory.close()


def _layer_only(m: Any, why: str) -> None:
    """An example that cannot run on mem0's own Memory offline (it needs mem0's LLM, or shows a documented
    difference of the drop-in): skipped there with the reason."""
    if type(m).__module__.startswith("mem0."):
        pytest.skip(f"not run on mem0 itself: {why}")


def _texts(rows: list[dict]) -> list[str]:
    return sorted(r["memory"] for r in rows)


def test_quickstart_add_a_conversation(m: Memory):
    """Quickstart, "Add memories": add(messages, user_id, metadata). Checks: {"results": [...]}, each an event on a
    memory that get() then answers with the caller's metadata."""
    _layer_only(m, "infer=True calls mem0's LLM")
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
    assert history[0]["updated_at"] == history[0]["created_at"]  # mem0 stamps its ADD row's update time too
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


class _Summariser:
    """mem0's LLM interface (generate_response) answering one fixed summary: mem0's procedural path runs offline."""

    def generate_response(self, messages: Any, **_: Any) -> str:
        return "Task: weekly report. 1. Open the dashboard 2. Filter by last week"


def test_procedural_memory_of_an_agent(m: Memory, monkeypatch: Any):
    """"Procedural memory": add(messages, agent_id, memory_type="procedural_memory"). Checks ONE memory for the whole
    procedure (one ADD), with metadata memory_type "procedural_memory", read back by the agent alone. The summary is
    the LLM's (on mem0, a stub of its LLM); the drop-in's offline is the steps in order, numbered (docs/mem0.md)."""
    steps = [{"role": "user", "content": "Open the dashboard"}, {"role": "assistant", "content": "Filter by last week"}]
    on_mem0 = type(m).__module__.startswith("mem0.")
    if on_mem0:
        monkeypatch.setattr(m, "llm", _Summariser())
    summary = _Summariser().generate_response(steps) if on_mem0 else \
        "1. user: Open the dashboard\n2. assistant: Filter by last week"
    result = m.add(steps, agent_id="pr_agent", memory_type="procedural_memory")
    assert result == {"results": [{"id": result["results"][0]["id"], "memory": summary, "event": "ADD"}]}
    (got,) = m.get_all(filters={"agent_id": "pr_agent"})["results"]
    assert (got["id"], got["memory"], got["metadata"], got["agent_id"]) == \
        (result["results"][0]["id"], summary, {"memory_type": "procedural_memory"}, "pr_agent")
    assert [r["id"] for r in m.get_all(filters={"agent_id": "pr_agent", "memory_type": "procedural_memory"})["results"]] \
        == [got["id"]]


@pytest.fixture(params=BACKENDS)
def fresh(request: Any, shared_db: Any, embedder: Any, tmp_path: Any) -> Iterator[Memory]:
    """A store of its own (reset erases the whole store): the drop-in's, or mem0's own where mem0ai is installed."""
    if request.param == "mem0":
        from .reference import open_reference

        memory = open_reference(tmp_path, embedder)
    else:
        memory = open_mem0(shared_db, embedder)
    yield memory
    memory.close()


def _async_memory(m: Any, tmp_path: Any, embedder: Any) -> Any:
    """mem0's AsyncMemory as a program opens it: the drop-in's over the module's store, or mem0's own (reference.py)."""
    if type(m).__module__.startswith("mem0."):
        from .reference import open_reference

        return open_reference(tmp_path, embedder, asynchronous=True)
    from hippocampus.compat.mem0 import AsyncMemory

    return AsyncMemory(memory=m.memory)


def test_reset_erases_everything(fresh: Memory):
    """Python SDK, reset(): every memory of every user is gone. Checks get_all and history after it."""
    (added,) = fresh.add("A memory to erase", user_id="rs_alice", infer=False)["results"]
    fresh.add("Another", agent_id="rs_agent", infer=False)
    assert fresh.reset() is None
    assert fresh.get_all(filters={"user_id": "rs_alice"})["results"] == []
    assert fresh.get_all(filters={"agent_id": "rs_agent"})["results"] == [] and fresh.history(added["id"]) == []


def _mem0_differs(m: Any, why: str, documented: Any) -> None:
    """The documented answer, which mem0 itself does not give on its default store (as mem0_cases.REFERENCE_DIFFERS):
    required of the drop-in; on mem0 an expected failure, and a failure the day mem0 agrees."""
    if not type(m).__module__.startswith("mem0."):
        assert documented()
    elif documented():
        pytest.fail(f"mem0 now gives the documented answer: drop this difference ({why})")
    else:
        pytest.xfail(why)


# ---------------------------------------------------------------- "Add memory" (core-concepts/memory-operations/add)
TRIP = [{"role": "user", "content": "I'm planning a trip to Tokyo next month."},
        {"role": "assistant", "content": "Great! I'll remember that for future suggestions."}]


def test_add_a_trip_plan_as_raw_messages(m: Memory):
    """"Add memory", the first example with infer=False: add(messages=..., user_id=). Checks one ADD per message,
    each with an id that get() answers, under the user named."""
    result = m.add(messages=TRIP, user_id="add_trip", infer=False)
    assert [r["event"] for r in result["results"]] == ["ADD", "ADD"]
    for r, said in zip(result["results"], TRIP):
        got = m.get(r["id"])
        assert (got["memory"], got["user_id"]) == (said["content"], "add_trip")


def test_add_raw_messages_with_metadata(m: Memory):
    """"Add memory", `infer=False` with `metadata={"category": ...}`: every stored message carries the metadata.
    Checks get_all's metadata on each."""
    m.add(MOVIES, user_id="add_meta", metadata={"category": "movie_recommendations"}, infer=False)
    rows = m.get_all(filters={"user_id": "add_meta"})["results"]
    assert _texts(rows) == sorted(t["content"] for t in MOVIES)
    assert all(r["metadata"] == {"category": "movie_recommendations"} for r in rows)


def test_add_with_an_expiration_date(m: Memory):
    """"Add memory", `expiration_date="2030-01-31"`: the date is kept as given and the memory is read until then.
    Checks get()'s expiration_date and get_all."""
    (added,) = m.add("Renew the passport before the trip", user_id="add_exp", expiration_date="2030-01-31",
                     infer=False)["results"]
    assert m.get(added["id"])["expiration_date"] == "2030-01-31"
    assert [r["id"] for r in m.get_all(filters={"user_id": "add_exp"})["results"]] == [added["id"]]


@pytest.mark.parametrize("when", ["next friday", "2030/01/31", 20300131])
def test_add_with_an_expiration_date_not_in_the_documented_form(m: Memory, when: Any):
    """"Add memory": expiration_date is a date "YYYY-MM-DD". Another form (words, slashes, a number) is mem0's
    ValueError, and nothing is written."""
    with pytest.raises(ValueError, match="expiration_date must be a"):
        m.add("Renew the visa", user_id="add_badexp", expiration_date=when, infer=False)
    assert m.get_all(filters={"user_id": "add_badexp"}, show_expired=True)["results"] == []


def test_update_merges_metadata(m: Memory):
    """"Update", update(memory_id, metadata=...): mem0 merges the keys given into the memory's metadata and keeps
    its text. Checks the merged metadata and the text."""
    (added,) = m.add("Likes tea", user_id="up_meta", metadata={"category": "drinks", "priority": 1}, infer=False)["results"]
    m.update(added["id"], metadata={"priority": 2, "mood": "calm"})
    got = m.get(added["id"])
    assert (got["memory"], got["metadata"]) == ("Likes tea", {"category": "drinks", "priority": 2, "mood": "calm"})


def test_add_an_empty_conversation(m: Memory):
    """"Add memory", add(messages, user_id, infer=False) where the conversation holds no turn yet: nothing is kept. Checks mem0's
    {"results": []} and no memory."""
    assert m.add([], user_id="add_empty", infer=False) == {"results": []}
    assert m.get_all(filters={"user_id": "add_empty"})["results"] == []


def test_add_one_message_dict(m: Memory):
    """"Python SDK", add(): `messages` may be one {"role", "content"} dict. Checks it is stored as that message."""
    (added,) = m.add({"role": "user", "content": "I am allergic to peanuts"}, user_id="add_dict", infer=False)["results"]
    assert (added["event"], added["memory"]) == ("ADD", "I am allergic to peanuts")
    assert m.get(added["id"])["role"] == "user"


def test_add_without_inference_skips_system_messages(m: Memory):
    """"Add memory", infer=False: mem0 stores the user's and the assistant's turns; a system prompt is not a
    memory. Checks only the two turns are kept."""
    said = [{"role": "system", "content": "You are a travel assistant."}, *TRIP]
    result = m.add(said, user_id="add_sys", infer=False)["results"]
    assert [r["memory"] for r in result] == [t["content"] for t in TRIP]
    assert len(m.get_all(filters={"user_id": "add_sys"})["results"]) == 2


def test_add_answers_only_add_events(m: Memory):
    """Migration v2 to v3, "add returns only ADD events": the loop over result["results"] prints each new memory.
    Checks every event is ADD and each names a memory get() answers."""
    _layer_only(m, "infer=True calls mem0's LLM")
    result = m.add("I love hiking and my dog's name is Max", user_id="mig_alice")
    assert result["results"] and all(item["event"] == "ADD" for item in result["results"])
    assert all(m.get(item["id"])["memory"] == item["memory"] for item in result["results"])


def test_a_message_that_is_an_image_is_refused_by_name(m: Memory):
    """"Multimodal support": a message whose content is an image_url object. The drop-in reads text only: a
    documented ValueError before anything is written (docs/mem0.md, "Where it differs")."""
    _layer_only(m, "mem0 describes the image with its LLM")
    messages = [{"role": "user", "content": "Hi, my name is Alice."},
                {"role": "user", "content": {"type": "image_url", "image_url": {"url": "https://example.com/menu.jpg"}}}]
    with pytest.raises(ValueError, match="string role and content"):
        m.add(messages, user_id="mm_alice")
    assert m.get_all(filters={"user_id": "mm_alice"})["results"] == []


# ---------------------------------------------------------------- "Search" (core-concepts/memory-operations/search)
@pytest.fixture(scope="module")
def drinks(m: Memory) -> Memory:
    """Alice's three memories of the search page's examples, with the page's categories."""
    m.add("Prefers green tea over coffee", user_id="se_alice", metadata={"categories": ["diet", "drinks"]}, infer=False)
    m.add("Is vegetarian", user_id="se_alice", metadata={"categories": ["diet"]}, infer=False)
    m.add("Plays the cello on Sundays", user_id="se_alice", metadata={"categories": ["hobbies"]}, infer=False)
    return m


def test_search_the_simple_form(drinks: Memory):
    """"Search", the simple search: entity ids in `filters`. Checks mem0's item: id, memory, hash, metadata, score,
    created_at, updated_at, user_id; best first, the tea memory on top."""
    related = drinks.search("Should I drink coffee or tea?", filters={"user_id": "se_alice"}, threshold=0.0)["results"]
    assert related[0]["memory"] == "Prefers green tea over coffee"
    assert ITEM | {"score", "user_id"} <= set(related[0]) and related[0]["user_id"] == "se_alice"
    assert [r["score"] for r in related] == sorted((r["score"] for r in related), reverse=True)


def test_search_with_a_category_filter(drinks: Memory):
    """"Search", metadata beside the entity: {"categories": {"contains": "diet"}}. Checks only the diet memories."""
    memories = drinks.search("food preferences", filters={"user_id": "se_alice", "categories": {"contains": "diet"}},
                             threshold=0.0)
    assert _texts(memories["results"]) == ["Is vegetarian", "Prefers green tea over coffee"]


def test_search_explain(drinks: Memory):
    """"Search", explain=True: each result carries score_details. Checks mem0's keys and that final_score is the
    score."""
    results = drinks.search("food preferences", filters={"user_id": "se_alice"}, explain=True, threshold=0.0)
    details = results["results"][0]["score_details"]
    assert {"semantic_score", "bm25_score", "final_score"} <= set(details)
    assert details["final_score"] == pytest.approx(results["results"][0]["score"], abs=1e-6)


def test_search_default_threshold_drops_unrelated(drinks: Memory):
    """Migration v2 to v3: threshold=0.1 is the new default; pass 0.0 to disable. Checks every default result has
    a score of at least 0.1 and threshold=0.0 answers at least as many."""
    default = drinks.search("what meetings did I attend?", filters={"user_id": "se_alice"}, top_k=20)["results"]
    assert all(r["score"] >= 0.1 for r in default)
    everything = drinks.search("what meetings did I attend?", filters={"user_id": "se_alice"}, threshold=0.0)["results"]
    assert len(everything) >= len(default) and len(everything) == 3


def test_search_rerank_is_a_flag(drinks: Memory):
    """Migration v2 to v3: rerank=False is the default, rerank=True without a reranker configured changes nothing.
    Checks both answer the same memories."""
    plain = drinks.search("tea", filters={"user_id": "se_alice"}, threshold=0.0, rerank=False)["results"]
    again = drinks.search("tea", filters={"user_id": "se_alice"}, threshold=0.0, rerank=True)["results"]
    assert [r["id"] for r in plain] == [r["id"] for r in again]


def test_search_refuses_top_level_entity_ids(drinks: Memory):
    """Migration v2 to v3, "entity IDs go inside filters": the v2 call search(query, user_id=...) is a ValueError
    in v3. Checks the error names the parameter."""
    with pytest.raises(ValueError, match="Top-level entity parameters"):
        drinks.search("what meetings did I attend?", user_id="se_alice", top_k=20)
    with pytest.raises(ValueError, match="Top-level entity parameters"):
        drinks.get_all(user_id="se_alice")


def test_search_needs_an_entity(drinks: Memory):
    """"Search": filters must hold at least one of user_id, agent_id, run_id. Checks a search without one is a
    ValueError."""
    with pytest.raises(ValueError):
        drinks.search("tea", filters={"categories": {"contains": "diet"}})


def test_search_a_session_by_user_agent_and_run(m: Memory):
    """"Search", "Get memories from a specific agent session: entity IDs combined in filters". Checks only the
    memory carrying all three ids."""
    m.add("Wants a window seat", user_id="ss_alice", agent_id="chatbot", run_id="session-123", infer=False)
    m.add("Wants an aisle seat", user_id="ss_alice", agent_id="chatbot", run_id="session-456", infer=False)
    found = m.search("query", filters={"user_id": "ss_alice", "agent_id": "chatbot", "run_id": "session-123"},
                     threshold=0.0)["results"]
    assert [(r["memory"], r["agent_id"], r["run_id"]) for r in found] == [("Wants a window seat", "chatbot", "session-123")]


def test_search_the_platform_or_of_entities_is_refused(m: Memory):
    """"Search", the Platform's {"OR": [{"user_id": ...}, {"agent_id": {"in": [...]}}]}: mem0's open-source Memory
    and the drop-in need the entity at the top of filters, so it is a ValueError (docs/mem0.md, "Filters")."""
    filters = {"OR": [{"user_id": "alice"}, {"agent_id": {"in": ["travel-assistant", "customer-support"]}}]}
    with pytest.raises(ValueError, match="user_id"):
        m.search("What do you know about me?", filters=filters)


def test_search_from_a_reference_date_is_refused(drinks: Memory):
    """Platform "Temporal reasoning", search(..., reference_date="2025-03-21T00:00:00Z"): mem0's open-source Memory
    refuses it as a Platform feature, and so does the drop-in. Checks the ValueError names the parameter."""
    with pytest.raises(ValueError, match="reference_date"):
        drinks.search("What happened last week?", filters={"user_id": "se_alice"}, reference_date="2025-03-21T00:00:00Z")


def test_search_by_created_at(drinks: Memory):
    """"Search", date filtering: {"created_at": {"gte": "2024-07-01"}} beside the user. Checks every memory added
    today passes and a future bound passes none."""
    since = drinks.search("tea", filters={"user_id": "se_alice", "created_at": {"gte": "2024-07-01"}}, threshold=0.0)
    assert len(since["results"]) == 3
    later = drinks.get_all(filters={"user_id": "se_alice", "created_at": {"gte": "2999-01-01"}})
    assert later["results"] == []


# ---------------------------------------------------------------- "Enhanced metadata filtering" (open-source/features)
@pytest.fixture(scope="module")
def tasks(m: Memory) -> Memory:
    """Three memories of one user with the filtering page's keys: category, priority, status, title, tags."""
    m.add("Prepare the quarterly report", user_id="mf_alice", metadata={
        "category": "work", "priority": 9, "status": "active", "title": "Quarterly Report", "tags": ["urgent"]},
        infer=False)
    m.add("Buy oat milk", user_id="mf_alice", metadata={"category": "food", "priority": 2, "status": "done"}, infer=False)
    m.add("Book the dentist", user_id="mf_alice", metadata={"category": "personal", "priority": 5, "status": "active"},
          infer=False)
    return m


def _listed(m: Memory, **more: Any) -> list[str]:
    return _texts(m.get_all(filters={"user_id": "mf_alice", **more})["results"])


def test_filter_eq_and_ne(tasks: Memory):
    """Metadata filtering, equality: {"status": {"eq": "active"}}, {"category": {"ne": "work"}}. Checks the sets."""
    assert _listed(tasks, status={"eq": "active"}) == ["Book the dentist", "Prepare the quarterly report"]
    assert _listed(tasks, category={"ne": "work"}) == ["Book the dentist", "Buy oat milk"]


def test_filter_in_and_nin(tasks: Memory):
    """Metadata filtering, membership: {"category": {"in": [...]}}, {"status": {"nin": [...]}}. Checks the sets."""
    assert _listed(tasks, category={"in": ["food", "personal"]}) == ["Book the dentist", "Buy oat milk"]
    assert _listed(tasks, status={"nin": ["done"]}) == ["Book the dentist", "Prepare the quarterly report"]


def test_filter_comparisons(tasks: Memory):
    """Metadata filtering, comparisons: gt, gte, lt, lte on a number. Checks each bound's set."""
    assert _listed(tasks, priority={"gt": 5}) == ["Prepare the quarterly report"]
    assert _listed(tasks, priority={"gte": 5}) == ["Book the dentist", "Prepare the quarterly report"]
    assert _listed(tasks, priority={"lt": 5}) == ["Buy oat milk"]
    assert _listed(tasks, priority={"lte": 5}) == ["Book the dentist", "Buy oat milk"]


def test_filter_contains_and_icontains(tasks: Memory):
    """Metadata filtering, text matching: contains is case-sensitive, icontains is not. Checks both, through
    search as the page writes it."""
    found = tasks.search("report", filters={"user_id": "mf_alice", "title": {"contains": "Report"}}, threshold=0.0)
    assert _texts(found["results"]) == ["Prepare the quarterly report"]
    assert _listed(tasks, title={"icontains": "report"}) == ["Prepare the quarterly report"]
    _mem0_differs(tasks, "mem0 on Qdrant matches `contains` as full text, ignoring case",
                  lambda: _listed(tasks, title={"contains": "report"}) == [])


def test_filter_and_or_not(tasks: Memory):
    """Metadata filtering, logical operators AND, OR, NOT (a list: none of them holds). Checks each set."""
    assert _listed(tasks, AND=[{"status": "active"}, {"priority": {"gte": 9}}]) == ["Prepare the quarterly report"]
    assert _listed(tasks, OR=[{"category": "food"}, {"priority": {"gte": 9}}]) == \
        ["Buy oat milk", "Prepare the quarterly report"]
    assert _listed(tasks, NOT=[{"category": "work"}, {"status": "done"}]) == ["Book the dentist"]


def test_filter_wildcard(tasks: Memory):
    """Metadata filtering, wildcard: {"tags": "*"} matches the memories that have the key (the drop-in follows the
    README and pgvector; mem0 on Qdrant lets every memory through, docs/mem0.md)."""
    _mem0_differs(tasks, "on Qdrant '*' is a no-op, as mem0's page warns (mem0_cases.REFERENCE_DIFFERS)",
                  lambda: _listed(tasks, tags="*") == ["Prepare the quarterly report"])


def test_filter_an_unknown_operator_is_a_value_error(tasks: Memory):
    """Metadata filtering, "handle invalid operators": an unknown operator is a ValueError."""
    with pytest.raises(ValueError):
        tasks.search("test query", filters={"user_id": "mf_alice", "priority": {"unknown": 1}})


# ---------------------------------------------------------------- "Update" and "Delete" (core-concepts/memory-operations)
def test_update_text_metadata_and_expiry(m: Memory):
    """"Update", the open-source example: update(memory_id=, text=), then text + metadata + expiration_date. Checks
    get() shows the new text, the metadata and the date, and history the old text."""
    (added,) = m.add("Alex prefers coffee", user_id="up_alex", infer=False)["results"]
    assert m.update(memory_id=added["id"], text="Alex now prefers decaf coffee") == \
        {"message": "Memory updated successfully!"}
    m.update(memory_id=added["id"], text="Alex now prefers decaf coffee", metadata={"category": "preferences"},
             expiration_date="2030-01-31")
    got = m.get(added["id"])
    assert (got["memory"], got["metadata"], got["expiration_date"]) == \
        ("Alex now prefers decaf coffee", {"category": "preferences"}, "2030-01-31")
    assert m.history(added["id"])[1]["old_memory"] == "Alex prefers coffee"


def test_update_needs_something_to_change(m: Memory):
    """"Update": at least one of text, metadata, expiration_date. Checks mem0's ValueError."""
    (added,) = m.add("Alex likes jazz", user_id="up_none", infer=False)["results"]
    with pytest.raises(ValueError, match="At least one of text, metadata, or expiration_date"):
        m.update(memory_id=added["id"])


def test_update_an_unknown_memory(m: Memory):
    """"Update" of an id that names no memory (the page's placeholder "mem_123"): mem0's ValueError "Memory with id
    ... not found". Checks the message."""
    with pytest.raises(ValueError, match="not found"):
        m.update(memory_id="mem_123", text="Alex now prefers decaf coffee")


def test_delete_one_memory(m: Memory):
    """"Delete", memory.delete(memory_id=): get() answers None after it, history ends with DELETE."""
    (added,) = m.add("Temporary note", user_id="del_one", infer=False)["results"]
    assert m.delete(memory_id=added["id"]) == {"message": "Memory deleted successfully!"}
    assert m.get(added["id"]) is None and m.history(added["id"])[-1]["event"] == "DELETE"


def test_delete_an_unknown_memory(m: Memory):
    """"Delete" of the page's placeholder id "mem_123": mem0's ValueError "Memory with id mem_123 not found"."""
    with pytest.raises(ValueError, match="Memory with id mem_123 not found"):
        m.delete(memory_id="mem_123")


def test_delete_all_of_one_user(m: Memory):
    """"Delete", memory.delete_all(user_id="alice"): that user's memories go, another user's stay."""
    m.add("Alice's note", user_id="da_alice", infer=False)
    m.add("Bob's note", user_id="da_bob", infer=False)
    assert m.delete_all(user_id="da_alice") == {"message": "Memories deleted successfully!"}
    assert m.get_all(filters={"user_id": "da_alice"})["results"] == []
    assert _texts(m.get_all(filters={"user_id": "da_bob"})["results"]) == ["Bob's note"]


def test_delete_all_needs_a_scope(m: Memory):
    """"Delete": delete_all() without an id is refused; use reset(). Checks mem0's ValueError."""
    with pytest.raises(ValueError, match="reset"):
        m.delete_all()


def test_history_of_an_unknown_memory_is_empty(m: Memory):
    """"Python SDK", history(memory_id): an id that names no memory has no changes. Checks []."""
    assert m.history("non-existent-id") == []


# ---------------------------------------------------------------- "Memory types" (core-concepts/memory-types)
def test_session_memory_of_a_trip(m: Memory):
    """"Memory types", short-term session memory: add with user_id and run_id, search both. Checks the answer is
    the run's memory with both ids."""
    m.add("I'm Alex and I prefer boutique hotels.", user_id="mt_alex", run_id="trip-planning-2025", infer=False)
    m.add("I'm Alex and I work in Berlin.", user_id="mt_alex", infer=False)
    results = m.search("Any hotel preferences?", filters={"user_id": "mt_alex", "run_id": "trip-planning-2025"},
                       threshold=0.0)["results"]
    assert [(r["memory"], r["run_id"]) for r in results] == [("I'm Alex and I prefer boutique hotels.",
                                                               "trip-planning-2025")]


def test_get_all_top_k(m: Memory):
    """"Python SDK", get_all(filters=, top_k=): at most top_k memories. Checks the cut."""
    for i in range(3):
        m.add(f"Note number {i}", user_id="ga_topk", infer=False)
    assert len(m.get_all(filters={"user_id": "ga_topk"}, top_k=2)["results"]) == 2
    assert len(m.get_all(filters={"user_id": "ga_topk"})["results"]) == 3


# ---------------------------------------------------------------- "Configuration" and removed features
@pytest.mark.parametrize("config,said", [
    ({"reranker": {"provider": "cohere", "config": {"model": "rerank-v3.5", "api_key": "your-cohere-api-key"}}},
     "reranker"),
    ({"graph_store": {"provider": "neo4j", "config": {"url": "...", "username": "...", "password": "..."}}},
     "graph_store"),
    ({"custom_fact_extraction_prompt": "Focus on user preferences"}, "custom_fact_extraction_prompt"),
])
def test_from_config_refuses_what_has_no_counterpart(config: dict[str, Any], said: str):
    """"Reranker search" (a cohere reranker) and migration v2 to v3 (graph_store, custom_fact_extraction_prompt):
    Memory.from_config refuses by name, before anything opens (docs/mem0.md, "Configuration")."""
    from hippocampus.compat.mem0 import Memory as DropIn

    with pytest.raises(ValueError, match=said):
        DropIn.from_config(config)


def test_custom_instructions_from_config(tmp_path: Any, monkeypatch: Any):
    """"Custom instructions": from_config({"llm": {...}, "custom_instructions": ...}). Checks they become the
    project's instructions, temperature is named in a warning, and no model is called to open the store."""
    from hippocampus.compat.mem0 import Memory as DropIn

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "your-api-key")  # as the pages set it; nothing here calls OpenAI
    custom_instructions = "Please only extract entities containing customer support information."
    config = {"llm": {"provider": "openai", "config": {"model": "gpt-5-mini", "temperature": 0.2, "max_tokens": 2000}},
              "vector_store": {"provider": "milvus", "config": {"url": str(tmp_path / "ci.db"), "collection_name": "ci"}},
              "custom_instructions": custom_instructions}
    with pytest.warns(UserWarning, match="temperature"):
        m = DropIn.from_config(config)
    try:
        assert m.memory.config.instructions == custom_instructions
        cfg = m.memory.config
        assert (cfg.llm_model, cfg.llm_max_tokens, cfg.llm_base_url) == ("gpt-5-mini", 2000, "https://api.openai.com/v1")
    finally:
        m.close()


# ---------------------------------------------------------------- "Async memory" (open-source/features/async-memory)
def test_async_memory_operations(m: Memory, tmp_path: Any, embedder: Any):
    """"Async memory", the operations: add, search, get_all, get, update, delete, delete_all, awaited. Checks each
    answer is mem0's."""
    import asyncio

    memory = _async_memory(m, tmp_path, embedder)

    async def main() -> None:
        result = await memory.add(messages=[{"role": "user", "content": "I'm travelling to SF"},
                                            {"role": "assistant", "content": "That's great to hear!"}],
                                  user_id="as_alice", infer=False)
        first = result["results"][0]["id"]
        results = await memory.search(query="Where am I travelling?", filters={"user_id": "as_alice"})
        assert results["results"][0]["memory"] == "I'm travelling to SF"
        assert len((await memory.get_all(filters={"user_id": "as_alice"}))["results"]) == 2
        assert (await memory.get(memory_id=first))["memory"] == "I'm travelling to SF"
        await memory.update(memory_id=first, text="I'm travelling to Seattle")
        assert (await memory.get(memory_id=first))["memory"] == "I'm travelling to Seattle"
        await memory.delete(memory_id=first)
        assert [h["event"] for h in await memory.history(memory_id=first)] == ["ADD", "UPDATE", "DELETE"]
        await memory.delete_all(user_id="as_alice")
        assert (await memory.get_all(filters={"user_id": "as_alice"}))["results"] == []

    try:
        asyncio.run(main())
    finally:
        memory.close()


def test_async_memory_scopes_and_gather(m: Memory, tmp_path: Any, embedder: Any):
    """"Async memory", multi-scope get_all (user, user+agent, user+run, all three) and adds gathered at once.
    Checks each scope reads the memory and every gathered add answers its own ADD."""
    import asyncio

    memory = _async_memory(m, tmp_path, embedder)

    async def main() -> None:
        await memory.add(messages=[{"role": "user", "content": "I prefer vegetarian food"}], user_id="asc_alice",
                         agent_id="diet-assistant", run_id="consultation-001", infer=False)
        for filters in ({"user_id": "asc_alice"}, {"user_id": "asc_alice", "agent_id": "diet-assistant"},
                        {"user_id": "asc_alice", "run_id": "consultation-001"},
                        {"user_id": "asc_alice", "agent_id": "diet-assistant", "run_id": "consultation-001"}):
            assert _texts((await memory.get_all(filters=filters))["results"]) == ["I prefer vegetarian food"]
        tasks = [memory.add(messages=[{"role": "user", "content": f"Message {i}"}], user_id=f"asg_user_{i}", infer=False)
                 for i in range(3)]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert [r["results"][0]["memory"] for r in results] == ["Message 0", "Message 1", "Message 2"]

    try:
        asyncio.run(main())
    finally:
        memory.close()


def test_the_suite_holds_at_least_40_documented_examples():
    """Issue 58: at least 40 of mem0's documented examples (this check aside)."""
    examples = [n for n in globals() if n.startswith("test_") and n != "test_the_suite_holds_at_least_40_documented_examples"]
    assert len(examples) >= 40
