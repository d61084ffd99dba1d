"""The MemoryReviewer (issue 14, item 4): at 0.9 it may promote to core, at the archive line (with a
real model) keep at 0.5 or delete (restorable); a search request gets its results in a second call;
a failed model leaves the rules of decay in charge. The model is scripted; the store is real."""

from __future__ import annotations

import json

from hippocampus.models import Category, HistoryAction, State


def test_the_model_promotes_at_point_nine_after_asking_for_a_search(modelled):
    memory, chat = modelled
    mid = memory.add("Emma is my daughter, she was born in 2019", user_id="u").ids[0]
    memory.add("Emma started school this autumn", user_id="u")
    memory.curate(mid, "u", importance=0.95)
    answers = iter([{"action": "search", "queries": ["Emma school", "x", "y", "z"], "reason": "more"},
                    {"action": "promote", "queries": [], "reason": "family"}])
    chat.replies["ReviewResult"] = lambda inputs: json.dumps(next(answers))
    stats = memory.decay("u")
    assert (stats.promoted, stats.reviewed) == (1, 1)
    assert memory.get(mid, "u").life.category is Category.CORE
    second = chat.prompts[-1].inputs
    assert second["searched"] and all(line.split(" -> ")[0] in ("Emma school", "x", "y") for line in second["searched"])
    assert "Emma started school this autumn" in " ".join(second["related"])


def test_at_the_archive_line_keep_resets_to_half_and_delete_is_restorable(modelled):
    memory, chat = modelled
    keep = memory.add("I am learning the cello", user_id="u").ids[0]
    drop = memory.add("Had noodles for lunch", user_id="u").ids[0]
    plain = memory.add("Saw a red car", user_id="u").ids[0]
    for mid in (keep, drop, plain):
        memory.curate(mid, "u", importance=0.15)
    chat.replies["ReviewResult"] = lambda inputs: (
        json.dumps({"action": "keep"}) if "cello" in inputs["memory"]["text"]
        else RuntimeError("model down") if "red car" in inputs["memory"]["text"]
        else json.dumps({"action": "delete", "reason": "trivial"}))
    stats = memory.decay("u")
    assert (stats.reviewed, stats.forgotten, stats.archived) == (2, 1, 1)  # the failed review: archived by the rules
    life = memory.get(keep, "u").life
    assert life.importance == 0.5 and life.state is State.ACTIVE and life.reviewed_at is not None
    assert memory.get(plain, "u").life.state is State.ARCHIVED
    event = [e for e in memory.history(drop, "u") if e.action is HistoryAction.FORGOTTEN][0]
    assert event.actor == "reviewer" and event.details["reason"] == "trivial"
    assert memory.restore(drop, "u").text == "Had noodles for lunch"


def test_a_delete_at_the_high_trigger_is_a_keep_and_offline_there_is_no_low_review(modelled, memory):
    model_memory, chat = modelled
    mid = model_memory.add("I usually deploy on Fridays", user_id="u").ids[0]
    model_memory.curate(mid, "u", importance=0.95)
    chat.replies["ReviewResult"] = lambda inputs: json.dumps({"action": "delete"})
    assert model_memory.decay("u").forgotten == 0
    assert [e.action for e in model_memory.history(mid, "u")][-1] is HistoryAction.REVIEWED
    low = memory.add("Saw a red car", user_id="u").ids[0]  # the offline memory fixture: rules, no low review
    memory.curate(low, "u", importance=0.15)
    stats = memory.decay("u")
    assert (stats.reviewed, stats.archived) == (0, 1)
