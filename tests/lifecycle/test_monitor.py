"""The KnowledgeMonitor (issue 14, item 5): one call after a turn adds, updates, boosts, deletes
(softly) and says what was used. Seed 004's section 7.2 rows (MemoryExtractor), adapted to the
monitor, each test named after its row; then the monitor's own guarantees. Real milvus-lite; the
model scripted through the ChatModel interface, or the offline rules."""

from __future__ import annotations

import json

import pytest

from hippocampus import InvalidInput
from hippocampus.models import Category, HistoryAction
from hippocampus.processors.monitor import MAX_SHOWN, repeats
from hippocampus.testing import ScriptedChatModel

TURN = [{"role": "user", "content": "I just started a pottery class on Thursdays, and please remember I'm vegetarian"},
        {"role": "assistant", "content": "Nice! Pottery on Thursdays, and vegetarian noted."}]


def _script(chat: ScriptedChatModel, answer: dict | str | Exception) -> None:
    chat.replies["MonitorResult"] = lambda inputs: answer if isinstance(answer, (str, Exception)) else json.dumps(answer)


def test_row_normal_conversation_gives_candidates_with_content_category_and_importance(modelled):
    memory, chat = modelled
    _script(chat, {"add": [{"text": "The user attends a pottery class on Thursdays", "category": "experience", "importance": "low"},
                           {"text": "The user is vegetarian", "category": "Preference", "importance": "HIGH"}],
                   "memories": [], "reason": "two new things"})
    bike = memory.add("The user owns a bike", user_id="u").ids[0]  # something shown: the model is asked
    result = memory.observe(TURN, user_id="u", shown=[bike])
    assert (len(result.added), result.llm_calls, chat.count("MonitorResult")) == (2, 1, 1)
    by_text = {r.text: r.life for r in memory.get_all("u")}
    assert by_text["The user is vegetarian"].category is Category.PREFERENCE
    assert by_text["The user is vegetarian"].importance == pytest.approx(0.8)
    assert by_text["The user attends a pottery class on Thursdays"].importance == pytest.approx(0.4)
    assert memory.history(result.added[0], "u")[0].actor == "knowledge_monitor"


def test_with_nothing_shown_a_turn_the_gate_is_sure_of_costs_no_call(modelled):
    memory, chat = modelled
    assert memory.observe("hi there!", user_id="u").model_dump(include={"added", "llm_calls"}) == {"added": [], "llm_calls": 0}
    result = memory.observe(TURN, user_id="u")
    assert (len(result.added), result.llm_calls, chat.calls) == (1, 0, 0)


def test_row_empty_or_very_short_conversation_gives_nothing(memory):
    assert memory.observe([{"role": "user", "content": "ok"}, {"role": "assistant", "content": "👍"}], user_id="u").added == []
    with pytest.raises(InvalidInput):
        memory.observe([{"role": "user", "content": "   "}], user_id="u")
    assert memory.stats("u")["total"] == 0


def test_row_illegal_json_from_the_model_crashes_nothing_and_loses_nothing(modelled):
    memory, chat = modelled
    kept = memory.add("The user's sister lives in Lyon", user_id="u").ids[0]
    _script(chat, "sure! here is what I think: {add: [oops")
    result = memory.observe(TURN, user_id="u", shown=[kept])
    assert result.pending_decision and len(result.added) == 1 and result.updated == result.deleted == []
    raw = memory.get(result.added[0], "u")
    assert raw.metadata["pending_decision"] is True and "pottery" in raw.text
    assert memory.get(kept, "u").hit_count == 0 and memory.get(kept, "u").text == "The user's sister lives in Lyon"


def test_row_an_existing_memory_mentioned_again_is_boosted_not_duplicated(modelled):
    memory, chat = modelled
    veg = memory.add("The user is vegetarian", user_id="u").ids[0]
    _script(chat, {"add": [{"text": "the user is vegetarian.", "importance": "high"},
                           {"text": "User takes a pottery class on Thursdays"}], "memories": []})
    result = memory.observe(TURN, user_id="u", shown=[veg])
    assert len(result.added) == 1 and result.boosted == [veg]
    assert any("repeats m1" in r for r in result.refused)
    assert memory.get(veg, "u").life.activation_count == 1
    assert repeats("I live in Berlin", "The user lives in Berlin") and not repeats("I live in Paris", "The user lives in Berlin")


def test_row_token_control_shows_at_most_fifty_memories(modelled):
    memory, chat = modelled
    ids = memory.add_many([{"text": f"Note number {i} about the garden", "user_id": "u"} for i in range(MAX_SHOWN + 5)])
    _script(chat, {"add": [], "memories": [{"id": "m55", "action": "delete"}, {"id": "m50", "action": "boost", "used": True}]})
    result = memory.observe(TURN, user_id="u", shown=ids)
    shown = chat.prompts[-1].inputs["memories"]
    assert len(shown) == MAX_SHOWN and shown[0]["id"] == "m1" and shown[0]["text"] == "Note number 0 about the garden"
    assert result.used == [ids[49]] and result.deleted == [] and any(r.startswith("m55") for r in result.refused)
    assert memory.stats("u")["total"] == MAX_SHOWN + 5


def test_update_keeps_the_old_text_in_history_and_delete_is_soft_and_restorable(modelled):
    memory, chat = modelled
    sister = memory.add("The user's sister lives in Lille", user_id="u").ids[0]
    job = memory.add("The user is thinking about quitting their job", user_id="u").ids[0]
    _script(chat, {"add": [], "memories": [
        {"id": "m1", "action": "update", "used": True, "text": "The user's sister lives in Lyon"},
        {"id": "m2", "action": "delete", "reason": "the user asked to forget it"}]})
    result = memory.observe("user: my sister lives in Lyon, not Lille. Forget the job thing.\nassistant: Lyon, noted.",
                            user_id="u", shown=[sister, job])
    assert (result.updated, result.deleted, result.used) == ([sister], [job], [sister])
    record = memory.get(sister, "u")
    assert record.text == "The user's sister lives in Lyon" and record.hit_count == 1
    update = [e for e in memory.history(sister, "u") if e.action is HistoryAction.UPDATED][-1]
    assert (update.old_text, update.actor) == ("The user's sister lives in Lille", "knowledge_monitor")
    assert memory.stats("u")["total"] == 1
    assert chat.prompts[-1].inputs["turns"][1]["role"] == "assistant"  # the one-string exchange was split
    back = memory.restore(job, "u")
    assert back.text == "The user is thinking about quitting their job"


def test_ids_outside_the_shown_set_and_core_memories_are_refused(modelled):
    memory, chat = modelled
    name = memory.add("The user's name is Dana", user_id="u").ids[0]
    memory.curate(name, "u", category="core")
    other = memory.add("Bob's secret plan", user_id="bob").ids[0]
    _script(chat, {"add": [], "memories": [{"id": "m1", "action": "delete"}, {"id": "m2", "action": "delete"},
                                           {"id": str(other), "action": "update", "text": "hacked"}]})
    result = memory.observe("user: call me Dee\nassistant: ok Dee", user_id="u", shown=[name, other])
    assert result.deleted == [] and result.updated == []
    assert any("not found for this user" in r for r in result.refused)  # bob's id was never shown
    assert any("core memory is never deleted" in r for r in result.refused)
    assert any(r.startswith("m2") for r in result.refused)
    assert memory.get(name, "u").text == "The user's name is Dana" and memory.get(other, "bob").text == "Bob's secret plan"
    assert all(m["text"] != "Bob's secret plan" for m in chat.prompts[-1].inputs["memories"])


def test_retrieved_but_not_used_is_left_alone_and_a_turn_costs_one_call(modelled):
    memory, chat = modelled
    a, b = memory.add_many([{"text": "The user likes jazz", "user_id": "u"}, {"text": "The user owns a bike", "user_id": "u"}])
    _script(chat, {"add": [], "memories": [{"id": "m1", "action": "skip", "used": True}, {"id": "m2", "action": "skip"}]})
    result = memory.observe("user: any music tips?\nassistant: Since you like jazz, try Coltrane.", user_id="u", shown=[a, b])
    assert (result.used, result.boosted, result.llm_calls, chat.calls) == ([a], [], 1, 1)
    assert memory.get(a, "u").hit_count == 1 and memory.get(b, "u").hit_count == 0
    assert memory.get(b, "u").life.activation_count == 0


def test_offline_rules_delete_what_a_forget_request_names_and_count_what_the_reply_repeats(memory):
    paris = memory.add("I am planning a trip to Paris", user_id="u").ids[0]
    dog = memory.add("My dog is called Rex", user_id="u").ids[0]
    hits = memory.search("Paris dog", user_id="u")
    result = memory.observe([{"role": "user", "content": "Forget what I said about Paris. What's my dog's name again?"},
                             {"role": "assistant", "content": "Your dog is Rex."}], user_id="u", shown=hits.all)
    assert (result.deleted, result.used, result.added) == ([paris], [dog], [])
    assert memory.get(dog, "u").hit_count == 1
    assert [e.action for e in memory.history(paris, "u")][-1] is HistoryAction.FORGOTTEN


def test_bad_shown_is_refused_before_anything_changes(memory):
    for bad in ("12", [True], [-1], ["x"]):
        with pytest.raises(InvalidInput):
            memory.observe("I adopted a cat", user_id="u", shown=bad)
    assert memory.stats("u")["total"] == 0
