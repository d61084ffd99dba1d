"""Procedural memories (a tool-call sequence that worked): a third memory_type in the one
collection, stored and listed like the others, recalled only when a search asks for them, never
merged with an episode by consolidation; a store without any opens as before."""

from __future__ import annotations

import pytest

from hippocampus import InvalidInput, Memory
from hippocampus.models import Category, MemoryType

STEPS = "Deploy the blog: run `make build`, then `rsync -av public/ host:/srv/blog`, then purge the CDN cache; it worked"


def test_a_procedure_round_trips_and_comes_back_only_when_asked_for(memory: Memory):
    pid = memory.add(STEPS, user_id="u", chat_id="c1", memory_type="procedural").ids[0]
    memory.add("I deployed the blog this morning", user_id="u", chat_id="c1")
    record = memory.get(pid, "u")
    assert (record.memory_type, record.life.category, record.metadata["procedure"]) == (MemoryType.PROCEDURAL, Category.SKILL_USAGE, STEPS)
    default = memory.search("how do I deploy the blog?", user_id="u")
    assert default.procedural == [] and all(h.memory.memory_type is not MemoryType.PROCEDURAL for h in default.all)
    asked = memory.search("how do I deploy the blog?", user_id="u", memory_types=["procedural", "episodic"])
    assert [h.id for h in asked.procedural] == [pid] and len(asked) == 2 and len(asked.all) == 2
    assert [h.id for h in memory.search("deploy", user_id="u", memory_type="procedural").all] == [pid]
    assert memory.stats("u")["procedural"] == 1 and memory.overview("u").by_type["procedural"] == 1
    for bad in ({"memory_type": "episodic", "memory_types": ["semantic"]}, {"memory_types": []}, {"memory_types": "procedural"},
                {"memory_types": ["skills"]}):
        with pytest.raises(InvalidInput):
            memory.search("deploy", user_id="u", **bad)


def test_consolidation_never_merges_a_procedure_with_an_episode(memory: Memory):
    text = "Ran make build and rsync to deploy the blog"
    pid = memory.add(text, user_id="u", chat_id="c1", ts=1_790_000_000, memory_type="procedural").ids[0]
    memory.add(text, user_id="u", chat_id="c1", ts=1_790_000_030)
    memory.add(text, user_id="u", chat_id="c1", ts=1_790_000_060)
    assert memory.consolidate("u").merged == 1  # the two episodes, not the procedure
    assert memory.get(pid, "u").text == text and memory.stats("u")["procedural"] == 1
