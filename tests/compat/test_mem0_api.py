"""mem0 v3's API through the drop-in, as mem0's documentation and Memory class define it: add (a string, one message
dict, a list; infer off stores each non-system message), search (ids inside filters, top_k, threshold), get,
get_all, update, delete, history, batch_update / batch_delete (the Platform's shapes), delete_all, reset; the
answers are mem0's dicts, and a bad call is a ValueError that changes nothing."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

import pytest

from hippocampus.compat.mem0 import Memory
from hippocampus.errors import InvalidInput

from .conftest import open_mem0

ITEM_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}
HISTORY_KEYS = {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted", "actor_id", "role"}


@pytest.fixture(scope="module")
def held(shared_db, embedder):
    """One memory of ana's, on a collection that no bad call may change."""
    m = open_mem0(shared_db, embedder)
    m.add("I like tennis", user_id="ana", infer=False)
    yield m
    m.close()


def _texts(rows: list[dict]) -> list[str]:
    return sorted(r["memory"] for r in rows)


def test_add_takes_a_string_a_message_dict_and_a_list(mem0: Memory):
    one = mem0.add("I like tennis", user_id="ana", infer=False)["results"]
    dict_ = mem0.add({"role": "user", "content": "I live in Lisbon"}, user_id="ana", infer=False)["results"]
    listed = mem0.add([{"role": "system", "content": "be nice"}, {"role": "user", "content": "My cat is Tom", "name": "ana_k"},
                       {"role": "assistant", "content": "Tom is a nice name"}], user_id="ana", infer=False)["results"]
    assert [r["memory"] for r in one + dict_ + listed] == ["I like tennis", "I live in Lisbon", "My cat is Tom", "Tom is a nice name"]
    assert all(r["event"] == "ADD" and isinstance(r["id"], str) for r in one + dict_ + listed)
    assert (listed[0]["role"], listed[0]["actor_id"], listed[1]["role"]) == ("user", "ana_k", "assistant")
    got = mem0.get(listed[0]["id"])
    assert (got["role"], got["actor_id"], got["user_id"]) == ("user", "ana_k", "ana")
    assert _texts(mem0.get_all(filters={"user_id": "ana"})["results"]) == sorted(r["memory"] for r in one + dict_ + listed)


def test_add_with_inference_keeps_what_the_write_decision_keeps(mem0: Memory):
    added = mem0.add([{"role": "user", "content": "My name is Ana and I live in Lisbon"}], user_id="ana",
                     metadata={"source": "chat"})["results"]
    assert added and all(r["event"] == "ADD" for r in added)
    assert all(mem0.get(r["id"])["metadata"] == {"source": "chat"} for r in added)  # the caller's keys only
    assert {r["id"] for r in added} <= {r["id"] for r in mem0.get_all(filters={"user_id": "ana"})["results"]}


@pytest.mark.parametrize("call,said", [
    (lambda m: m.add("x"), "at least one of: user_id, agent_id, run_id"),
    (lambda m: m.add(None, user_id="ana"), "messages must be"),
    (lambda m: m.add([{"role": "user"}], user_id="ana"), "string role and content"),
    (lambda m: m.add("x", user_id="an a"), "without whitespace"),
    (lambda m: m.search("x", user_id="ana"), "Top-level entity parameters"),
    (lambda m: m.get_all(user_id="ana"), "Top-level entity parameters"),
    (lambda m: m.search("x", filters={"user_id": "ana"}, threshold=1.5), "threshold must be a number in"),
    (lambda m: m.search("x", filters={"user_id": "ana"}, top_k=0), "top_k must be"),
    (lambda m: m.update("1"), "At least one of text, metadata, or expiration_date"),
    (lambda m: m.update("999999", text="y"), "not found"),
    (lambda m: m.delete("999999"), "not found"),
    (lambda m: m.delete("abc"), "Memory with id abc not found"),
    (lambda m: m.delete_all(), "use the `reset\\(\\)` method"),
    (lambda m: m.batch_delete([{"id": "1"}]), "each item is a dict with memory_id"),
    (lambda m: m.batch_update([]), "a list of 1 to 1000"),
])
def test_a_bad_call_is_a_value_error_that_changes_nothing(held: Memory, call, said: str):
    before = held.get_all(filters={"user_id": "ana"})
    assert len(before["results"]) == 1
    with pytest.raises(ValueError, match=said):
        call(held)
    assert held.get_all(filters={"user_id": "ana"}) == before


def test_search_answers_results_with_scores_best_first_within_top_k_and_threshold(mem0: Memory):
    for text in ("I play tennis every Sunday", "My sister lives in Porto", "I enjoy tennis and padel", "Paris is lovely"):
        mem0.add(text, user_id="ana", infer=False, metadata={"kind": "note"})
    mem0.add("Bo plays tennis too", user_id="bo", infer=False)
    found = mem0.search("tennis", filters={"user_id": "ana"}, top_k=2, threshold=0.0)
    assert set(found) == {"results"} and len(found["results"]) == 2
    top = found["results"]
    assert all(ITEM_KEYS | {"score", "user_id"} <= set(r) for r in top)
    assert all("tennis" in r["memory"] for r in top) and top[0]["score"] >= top[1]["score"]
    assert top[0]["metadata"] == {"kind": "note"} and top[0]["user_id"] == "ana"
    assert top[0]["hash"] == hashlib.md5(top[0]["memory"].encode()).hexdigest()
    datetime.fromisoformat(top[0]["created_at"])
    everything = mem0.search("tennis", filters={"user_id": "ana"}, threshold=0.0)["results"]
    cut = sorted(r["score"] for r in everything)[len(everything) // 2]
    high = mem0.search("tennis", filters={"user_id": "ana"}, threshold=cut)["results"]
    assert high and all(r["score"] >= cut for r in high) and len(high) < len(everything)
    assert "Bo plays tennis too" not in _texts(everything)


def test_get_get_all_update_history_and_delete(mem0: Memory):
    (added,) = mem0.add("I like tennis", user_id="ana", infer=False, metadata={"topic": "sport"})["results"]
    mid = added["id"]
    got = mem0.get(mid)
    assert ITEM_KEYS | {"user_id"} <= set(got) and (got["memory"], got["metadata"]) == ("I like tennis", {"topic": "sport"})
    assert mem0.get(int(mid)) == got  # an id as a number works too
    listed = mem0.get_all(filters={"user_id": "ana"})["results"]
    assert [r["id"] for r in listed] == [mid] and "score" not in listed[0]
    assert mem0.update(mid, text="I like padel") == {"message": "Memory updated successfully!"}
    assert mem0.update(memory_id=mid, metadata={"level": 2}) == {"message": "Memory updated successfully!"}
    after = mem0.get(mid)
    assert (after["memory"], after["metadata"]) == ("I like padel", {"topic": "sport", "level": 2})
    assert mem0.delete(mid) == {"message": "Memory deleted successfully!"}
    assert mem0.get(mid) is None and mem0.get_all(filters={"user_id": "ana"})["results"] == []
    history = mem0.history(mid)
    assert all(set(h) == HISTORY_KEYS for h in history)
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "UPDATE", "DELETE"]
    assert (history[1]["old_memory"], history[1]["new_memory"]) == ("I like tennis", "I like padel")
    assert history[-1]["is_deleted"] is True and history[0]["memory_id"] == mid
    assert mem0.history("424242") == []


def test_an_agent_or_run_without_a_user_reads_every_memory_carrying_it(mem0: Memory):
    """mem0 filters on the payload: an agent_id or run_id alone matches every memory carrying it, whatever its user."""
    mem0.add("Ticket 12 is about billing", agent_id="support_bot", infer=False)
    mem0.add("Ticket 13 is about login", agent_id="support_bot", run_id="r1", infer=False)
    mem0.add("Alice asked the bot about billing", user_id="alice", agent_id="support_bot", infer=False)
    mem0.add("Alice on her own", user_id="alice", infer=False)
    bot = mem0.get_all(filters={"agent_id": "support_bot"})["results"]
    assert _texts(bot) == ["Alice asked the bot about billing", "Ticket 12 is about billing", "Ticket 13 is about login"]
    assert all(r["agent_id"] == "support_bot" for r in bot) and [r.get("user_id") for r in bot].count("alice") == 1
    assert _texts(mem0.get_all(filters={"agent_id": "support_bot", "run_id": "r1"})["results"]) == ["Ticket 13 is about login"]
    assert _texts(mem0.get_all(filters={"user_id": "alice", "agent_id": "support_bot"})["results"]) == \
        ["Alice asked the bot about billing"]
    assert mem0.get_all(filters={"user_id": "alice", "agent_id": "other"})["results"] == []


def test_batch_update_and_batch_delete_take_the_platforms_shapes(mem0: Memory):
    ids = [mem0.add(t, user_id=u, infer=False)["results"][0]["id"]
           for t, u in (("Watches cricket", "ana"), ("Likes to stay home", "ana"), ("Plays chess", "bo"))]
    with pytest.raises(ValueError, match="not found"):
        mem0.batch_update([{"memory_id": ids[0], "text": "x"}, {"memory_id": "987654", "text": "y"}])
    assert mem0.get(ids[0])["memory"] == "Watches cricket"  # nothing changed
    done = mem0.batch_update([{"memory_id": ids[0], "text": "Watches football"}, {"memory_id": ids[1], "text": "Likes to travel"},
                              {"memory_id": ids[2], "metadata": {"level": "club"}}])
    assert done == {"message": "Successfully updated 3 memories"}
    assert [mem0.get(i)["memory"] for i in ids] == ["Watches football", "Likes to travel", "Plays chess"]
    assert mem0.get(ids[2])["metadata"] == {"level": "club"}
    with pytest.raises(ValueError, match="not found"):
        mem0.batch_delete([{"memory_id": ids[0]}, {"memory_id": "987654"}])
    assert mem0.get(ids[0]) is not None
    assert mem0.batch_delete([{"memory_id": ids[0]}, {"memory_id": ids[2]}]) == {"message": "Successfully deleted 2 memories"}
    assert [mem0.get(i) is None for i in ids] == [True, False, True]
    assert mem0.history(ids[0])[-1]["event"] == "DELETE"


def test_delete_all_deletes_the_named_scope_only_and_reset_everything(mem0: Memory):
    mem0.add("Ana one", user_id="ana", infer=False)
    mem0.add("Ana with the bot", user_id="ana", agent_id="bot", infer=False)
    mem0.add("Bo one", user_id="bo", infer=False)
    assert mem0.delete_all(user_id="ana", agent_id="bot") == {"message": "Memories deleted successfully!"}
    assert _texts(mem0.get_all(filters={"user_id": "ana"})["results"]) == ["Ana one"]
    mem0.delete_all(user_id="ana")
    assert mem0.get_all(filters={"user_id": "ana"})["results"] == []
    assert _texts(mem0.get_all(filters={"user_id": "bo"})["results"]) == ["Bo one"]
    (kept,) = mem0.get_all(filters={"user_id": "bo"})["results"]
    assert mem0.reset() is None
    assert mem0.get_all(filters={"user_id": "bo"})["results"] == [] and mem0.history(kept["id"]) == []


def test_expiration_date_hides_a_memory_unless_show_expired(mem0: Memory):
    mem0.add("The office was closed", user_id="ana", infer=False, expiration_date="2020-01-01")
    mem0.add("The office is open", user_id="ana", infer=False, expiration_date="2999-12-31")
    assert _texts(mem0.get_all(filters={"user_id": "ana"})["results"]) == ["The office is open"]
    shown = mem0.get_all(filters={"user_id": "ana"}, show_expired=True)["results"]
    assert _texts(shown) == ["The office is open", "The office was closed"]
    assert {r["expiration_date"] for r in shown} == {"2020-01-01", "2999-12-31"}


def test_from_config_takes_mem0s_dict(shared_db, embedder):
    with pytest.warns(UserWarning, match="history_db_path"):
        m = Memory({"custom_instructions": "Keep only hobbies", "history_db_path": "./history.db", "version": "v1.1",
                    "vector_store": {"provider": "milvus", "config": {"url": str(shared_db),
                                                                       "collection_name": f"m0_{uuid.uuid4().hex[:10]}"}},
                    "llm": {"provider": "ollama", "config": {"model": "qwen2.5:7b", "temperature": 0.1}}},
                   embedder=embedder)
    try:
        cfg = m.memory.config
        assert cfg.instructions == "Keep only hobbies" and cfg.milvus_uri == str(shared_db)
        assert (cfg.llm_provider, cfg.llm_model, cfg.llm_base_url) == ("openai", "qwen2.5:7b", "http://localhost:11434/v1")
    finally:
        m.close()
    with pytest.raises(ValueError, match="unknown mem0 config keys"):
        Memory.from_config({"no_such_key": "x"})


def test_async_memory_takes_the_same_calls(mem0: Memory):
    import anyio

    from hippocampus.compat.mem0 import AsyncMemory

    async def run() -> None:
        am = AsyncMemory(memory=mem0.memory)
        (added,) = (await am.add("I like tennis", user_id="ana", infer=False))["results"]
        assert (await am.search("tennis", filters={"user_id": "ana"}, threshold=0.0))["results"][0]["id"] == added["id"]
        await am.update(added["id"], text="I like padel")
        assert (await am.get(added["id"]))["memory"] == "I like padel"
        assert [h["event"] for h in await am.history(added["id"])] == ["ADD", "UPDATE"]
        assert (await am.delete_all(user_id="ana")) == {"message": "Memories deleted successfully!"}
        assert (await am.get_all(filters={"user_id": "ana"}))["results"] == []
        am.close()  # wraps a Memory it did not open: leaves it open

    anyio.run(run)
    assert mem0.get_all(filters={"user_id": "ana"}) == {"results": []}


def test_the_native_add_takes_one_message_dict_as_mem0_does(mem0: Memory):
    """hippocampus.Memory.add takes the shapes mem0's add takes: one {"role", "content"} dict is that message."""
    native = mem0.memory
    (memory_id,) = native.add({"role": "user", "content": "I keep bees on the roof"}, "bea").ids
    assert native.get(memory_id, "bea").text == "I keep bees on the roof"
    with pytest.raises(InvalidInput, match="dict"):
        native.add({"role": "user"}, "bea")  # a dict without content is refused, as a list's item is
