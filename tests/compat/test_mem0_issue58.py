"""Issue 58's cases, each found by running a mem0 program against mem0 2.2.1 offline and then against the drop-in:
scoping by agent_id or run_id alone, the caller's `categories`, a re-added text with an expiry, and the smaller
differences (clearing an expiry, an unknown id, history's role and actor_id, keys mem0 sets itself, explain)."""

from __future__ import annotations

import pytest

from hippocampus.compat.mem0 import Memory


def _texts(rows: list[dict]) -> list[str]:
    return sorted(r["memory"] for r in rows)


def _bot_and_group(m: Memory) -> None:
    """Three memories of the support bot (alone, with a user, with a run) and a group chat's three participants."""
    m.add("The refund policy is 30 days", agent_id="support-bot", infer=False)
    m.add("Alice's order 77 was late", user_id="alice", agent_id="support-bot", infer=False)
    m.add("Session xyz is about shipping", agent_id="support-bot", run_id="session-xyz", infer=False)
    for who in ("ana", "bo", "cy"):
        m.add(f"{who} wants pizza on Friday", user_id=who, run_id="group_chat_1", infer=False)
    m.add("Alice likes tea", user_id="alice", infer=False)


def test_an_agent_id_alone_reads_and_deletes_every_memory_carrying_it(mem0: Memory):
    _bot_and_group(mem0)
    bot = {"agent_id": "support-bot"}
    assert len(mem0.get_all(filters=bot)["results"]) == 3
    found = mem0.search("order refund shipping", filters=bot, threshold=0.0)["results"]
    assert len(found) == 3 and [r["score"] for r in found] == sorted((r["score"] for r in found), reverse=True)
    assert mem0.delete_all(agent_id="support-bot") == {"message": "Memories deleted successfully!"}
    assert mem0.get_all(filters=bot)["results"] == []
    assert _texts(mem0.get_all(filters={"user_id": "alice"})["results"]) == ["Alice likes tea"]


def test_a_run_id_alone_reads_and_deletes_every_participants_memories(mem0: Memory):
    _bot_and_group(mem0)
    group = mem0.get_all(filters={"run_id": "group_chat_1"})["results"]
    assert sorted(r["user_id"] for r in group) == ["ana", "bo", "cy"]
    assert len(mem0.search("pizza", filters={"run_id": "group_chat_1"}, threshold=0.0)["results"]) == 3
    assert len(mem0.get_all(filters={"run_id": "group_chat_1"}, top_k=2)["results"]) == 2
    mem0.delete_all(run_id="session-xyz")
    assert _texts(mem0.get_all(filters={"agent_id": "support-bot"})["results"]) == \
        ["Alice's order 77 was late", "The refund policy is 30 days"]
    mem0.delete_all(run_id="group_chat_1")
    assert mem0.get_all(filters={"run_id": "group_chat_1"})["results"] == []
    assert mem0.get_all(filters={"user_id": "ana"})["results"] == []


def test_any_agent_is_every_memory_with_an_agent(mem0: Memory):
    _bot_and_group(mem0)
    assert len(mem0.get_all(filters={"agent_id": "*"})["results"]) == 3


def test_categories_is_the_callers_metadata_key(mem0: Memory):
    mem0.add("I follow a vegetarian diet", user_id="alice", metadata={"categories": ["diet", "health"]}, infer=False)
    mem0.add("I like jazz", user_id="alice", metadata={"categories": ["music"]}, infer=False)
    mem0.add("I run on Sundays", user_id="alice", metadata={"categories": "sport"}, infer=False)
    got = mem0.get_all(filters={"user_id": "alice", "categories": {"contains": "diet"}})["results"]
    assert _texts(got) == ["I follow a vegetarian diet"] and got[0]["metadata"] == {"categories": ["diet", "health"]}
    assert _texts(mem0.get_all(filters={"user_id": "alice", "categories": "sport"})["results"]) == ["I run on Sundays"]


def test_adding_a_text_again_without_inference_adds_a_new_memory_and_leaves_the_old_one(mem0: Memory):
    text = "Dentist appointment on 2030-01-30"
    (first,) = mem0.add(text, user_id="bob", expiration_date="2030-01-31", infer=False)["results"]
    (again,) = mem0.add(text, user_id="bob", expiration_date="2030-02-28", infer=False)["results"]
    assert again["event"] == "ADD" and again["id"] != first["id"]
    assert (mem0.get(first["id"])["expiration_date"], mem0.get(again["id"])["expiration_date"]) == ("2030-01-31", "2030-02-28")
    assert [h["event"] for h in mem0.history(first["id"])] == ["ADD"]
    assert mem0.get(first["id"])["metadata"] is None  # no key of the library's (named_date, said_at, ...)


def test_adding_a_text_again_with_inference_answers_no_event_and_leaves_the_old_one(mem0: Memory):
    """mem0's inference answers NONE for a fact it already holds: no result, the memory unchanged."""
    text = "Remember my dentist appointment on 2030-01-30"
    first = mem0.add(text, user_id="bob", expiration_date="2030-01-31")["results"]
    assert [r["event"] for r in first] == ["ADD"]
    assert mem0.add(text, user_id="bob", expiration_date="2030-02-28")["results"] == []
    kept = mem0.get(first[0]["id"])
    assert kept["expiration_date"] == "2030-01-31" and kept["metadata"] is None
    assert [h["event"] for h in mem0.history(first[0]["id"])] == ["ADD"]


def test_update_clears_an_expiry_with_none(mem0: Memory):
    (added,) = mem0.add("The office is closed", user_id="ana", infer=False, expiration_date="2020-01-01")["results"]
    assert mem0.get_all(filters={"user_id": "ana"})["results"] == []
    mem0.update(added["id"], expiration_date=None)
    got = mem0.get(added["id"])
    assert "expiration_date" not in got and _texts(mem0.get_all(filters={"user_id": "ana"})["results"]) == [got["memory"]]


@pytest.mark.parametrize("memory_id", ["non-existent-id", "424242", "", 0])
def test_get_of_an_unknown_id_is_none(mem0: Memory, memory_id):
    assert mem0.get(memory_id) is None


def test_history_rows_carry_the_role_and_actor_id_the_memory_was_added_with(mem0: Memory):
    (added,) = mem0.add({"role": "user", "content": "I keep bees", "name": "ana_k"}, user_id="ana", infer=False)["results"]
    mem0.update(added["id"], text="I keep two hives")
    mem0.delete(added["id"])
    rows = mem0.history(added["id"])
    assert [h["event"] for h in rows] == ["ADD", "UPDATE", "DELETE"]
    assert {(h["role"], h["actor_id"]) for h in rows} == {("user", "ana_k")}


def test_keys_mem0_sets_itself_are_dropped_from_metadata_with_a_warning(mem0: Memory):
    with pytest.warns(UserWarning, match="agent_id"):
        (added,) = mem0.add("I keep bees", user_id="ana", metadata={"agent_id": "x", "hive": 2}, infer=False)["results"]
    got = mem0.get(added["id"])
    assert got["metadata"] == {"hive": 2} and "agent_id" not in got
    (said,) = mem0.add({"role": "user", "content": "I like figs", "name": "ana_k"}, user_id="ana", infer=False)["results"]
    with pytest.warns(UserWarning, match="actor_id"):
        mem0.update(said["id"], metadata={"actor_id": "mallory", "role": "assistant", "fruit": True})
    got = mem0.get(said["id"])
    assert (got["actor_id"], got["role"], got["metadata"]) == ("ana_k", "user", {"fruit": True})


def test_explain_names_the_scores_as_mem0_does(mem0: Memory):
    mem0.add("I play tennis every Sunday", user_id="ana", infer=False)
    (hit,) = mem0.search("tennis", filters={"user_id": "ana"}, threshold=0.0, explain=True)["results"]
    details = hit["score_details"]
    assert {"semantic_score", "bm25_score", "final_score"} <= set(details)
    assert details["final_score"] == hit["score"] and 0 <= details["bm25_score"] <= 1


MEM0_CONFIG_YAML = """\
vector_store:
  provider: qdrant
  config: {collection_name: test, host: localhost, port: 6333}
llm:
  provider: openai
  config: {model: gpt-4.1-nano-2025-04-14, temperature: 0.2}
embedder:
  provider: openai
  config: {model: text-embedding-3-small}
history_db_path: ./history.db
version: v1.1
"""


def test_a_mem0_config_yaml_in_the_working_directory_does_not_break_memory(tmp_path, monkeypatch, shared_db, embedder):
    """Hippocampus reads its settings from hippocampus.yaml (hippocampus/config_file.py), never another program's."""
    (tmp_path / "config.yaml").write_text(MEM0_CONFIG_YAML, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with Memory(milvus_uri=str(shared_db), collection_name="m0_cfg_yaml", embedder=embedder) as m:
        assert m.memory.config.k_semantic == 5  # the default: nothing read from mem0's file
        (added,) = m.add("I like tea", user_id="ana", infer=False)["results"]
        assert m.get(added["id"])["memory"] == "I like tea"


def test_mem0s_config_dict_maps_what_has_a_counterpart(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    from hippocampus.compat.mem0_config import native_config

    got = native_config({"vector_store": {"provider": "milvus", "config": {"url": "http://m:19530", "token": "t",
                                                                         "collection_name": "c", "embedding_model_dims": 1536}},
                         "llm": {"provider": "openai", "config": {"model": "gpt-4.1-mini", "api_key": "sk-x", "max_tokens": 900}},
                         "embedder": {"provider": "lmstudio", "config": {"model": "nomic", "embedding_dims": 768}}})
    assert got == {"milvus_uri": "http://m:19530", "milvus_token": "t", "collection_name": "c", "embedding_dim": 768,
                   "llm_provider": "openai", "llm_model": "gpt-4.1-mini", "llm_api_key": "sk-x", "llm_max_tokens": 900,
                   "llm_base_url": "https://api.openai.com/v1",
                   "embedding_provider": "openai", "embedding_model": "nomic", "embedding_base_url": "http://localhost:1234/v1"}


@pytest.mark.parametrize("config,said", [
    ({"vector_store": {"provider": "qdrant", "config": {"host": "localhost"}}}, "vector_store provider 'qdrant'"),
    ({"llm": {"provider": "anthropic", "config": {"model": "claude"}}}, "llm provider 'anthropic'"),
    ({"embedder": {"provider": "huggingface", "config": {}}}, "embedder provider 'huggingface'"),
    ({"graph_store": {"provider": "neo4j"}}, "'graph_store' has no counterpart"),
    ({"reranker": {"provider": "cohere"}}, "'reranker' has no counterpart"),
    ({"custom_fact_extraction_prompt": "Extract..."}, "'custom_fact_extraction_prompt' has no counterpart"),
    ({"custom_update_memory_prompt": "Update..."}, "'custom_update_memory_prompt' has no counterpart"),
    ({"version": "v1.0"}, "version 'v1.0'"),
    ({"llm": {"provider": "openai", "config": {"openai_api_base": "x"}}}, "no counterpart here"),
])
def test_mem0s_config_dict_refuses_by_name_what_has_no_counterpart(config, said):
    with pytest.raises(ValueError, match=said):
        Memory.from_config(config)


@pytest.mark.parametrize("key", ["time", "context", "said_at", "named_date", "importance"])
def test_a_metadata_key_the_library_writes_itself_is_refused(mem0: Memory, key: str):
    """Neither kept as given nor shown: refused by name before anything is written."""
    with pytest.raises(ValueError, match=key):
        mem0.add("I keep bees", user_id="ana", metadata={key: "x"}, infer=False)
    (added,) = mem0.add("I keep bees", user_id="ana", infer=False)["results"]
    with pytest.raises(ValueError, match=key):
        mem0.update(added["id"], metadata={key: "x"})
    assert mem0.get(added["id"])["metadata"] is None and len(mem0.get_all(filters={"user_id": "ana"})["results"]) == 1


def test_a_bad_expiration_date_with_inference_writes_nothing(mem0: Memory):
    with pytest.raises(ValueError, match="expiration_date must be a valid date in YYYY-MM-DD format"):
        mem0.add("Remember my dentist appointment on Monday", user_id="bob", expiration_date="not a date")
    assert mem0.get_all(filters={"user_id": "bob"}, show_expired=True)["results"] == []


STEPS = [{"role": "system", "content": "You are a browser agent"},
         {"role": "user", "content": "Find the cheapest flight to Lyon"},
         {"role": "assistant", "content": "Opened example.com/flights, sorted by price: 89 EUR on 2030-05-01"}]


def test_procedural_memory_is_one_memory_for_the_whole_procedure(mem0: Memory):
    """mem0 stores one summary of the procedure (metadata memory_type: procedural_memory) and answers one ADD; offline
    the summary is the user's and assistant's steps in order, numbered (the system message is not a step)."""
    result = mem0.add(STEPS, agent_id="browser", metadata={"site": "flights"}, memory_type="procedural_memory")
    (added,) = result["results"]
    assert result == {"results": [{"id": added["id"], "memory": added["memory"], "event": "ADD"}]}
    assert added["memory"] == ("1. user: Find the cheapest flight to Lyon\n"
                               "2. assistant: Opened example.com/flights, sorted by price: 89 EUR on 2030-05-01")
    (got,) = mem0.get_all(filters={"agent_id": "browser"})["results"]
    assert got["memory"] == added["memory"] and got["agent_id"] == "browser"
    assert got["metadata"] == {"site": "flights", "memory_type": "procedural_memory"}
    assert mem0.memory.get(int(added["id"]), mem0.memory.owner_of(int(added["id"]))).memory_type.value == "procedural"


def test_procedural_memory_is_the_configured_models_summary(mem0: Memory):
    from hippocampus.testing import ScriptedChatModel

    model = ScriptedChatModel().queue("```markdown\nTask: cheapest flight to Lyon. Step 1: sorted by price (89 EUR)\n```")
    with mem0.memory.override(llm=model):
        (added,) = mem0.add(STEPS, agent_id="browser", memory_type="procedural_memory")["results"]
    assert added["memory"] == "Task: cheapest flight to Lyon. Step 1: sorted by price (89 EUR)" and model.calls == 1
    assert "example.com/flights" in model.prompts[0].user and "system: You are a browser agent" in model.prompts[0].user
    assert mem0.get(added["id"])["metadata"] == {"memory_type": "procedural_memory"}


def test_procedural_memory_without_an_agent_is_an_ordinary_add_with_a_warning(mem0: Memory):
    """mem0 2.2.1 makes a procedural memory only when agent_id is given; otherwise it adds as usual (here infer=False:
    one memory per message, no memory_type). The drop-in does the same, and says so."""
    with pytest.warns(UserWarning, match="only with an agent_id"):
        added = mem0.add(STEPS[1:], user_id="ana", memory_type="procedural_memory", infer=False)["results"]
    assert [r["memory"] for r in added] == [s["content"] for s in STEPS[1:]]
    assert all(r["metadata"] is None for r in mem0.get_all(filters={"user_id": "ana"})["results"])


def test_custom_instructions_with_no_model_refuse_to_infer_and_store_nothing(shared_db, embedder):
    """The offline rules cannot follow free-text instructions ("only order information"): add(infer=True) says so
    instead of storing "I like going to hikes"; infer=False stores as said, as mem0 (it applies instructions only
    when inferring)."""
    with Memory({"custom_instructions": "Only store order information."}, milvus_uri=str(shared_db),
                collection_name="m0_instr_offline", embedder=embedder) as m:
        with pytest.raises(ValueError, match="custom_instructions are followed only by a model"):
            m.add("I like going to hikes", user_id="ana")
        assert m.get_all(filters={"user_id": "ana"}, show_expired=True)["results"] == []
        (kept,) = m.add("I like going to hikes", user_id="ana", infer=False)["results"]
        assert kept["memory"] == "I like going to hikes"
        steps = [{"role": "user", "content": "Export the orders"}]
        assert len(m.add(steps, agent_id="bot", memory_type="procedural_memory")["results"]) == 1
