"""MemoryContext (hippocampus/context.py): one per Memory, shared by every service by name; its
`processor(Cls)` builds any processor with the configured prompts; the LLM swapped on the facade is
the one every service uses from then on; consolidation runs the phases of one visible list."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.consolidation import service as consolidation
from hippocampus.context import MemoryContext
from hippocampus.llm.rules import RulesProvider
from hippocampus.processors.base import load_prompt
from hippocampus.processors.reviewer import MemoryReviewer
from hippocampus.processors.triple_extractor import TripleExtractor
from hippocampus.testing import ScriptedChatModel


@pytest.fixture
def custom(shared_db: Path, embedder, tmp_path: Path):
    """A Memory whose prompts_dir overrides the reviewer's prompt (a marker in its system text)."""
    packaged = load_prompt("memory_reviewer")
    (tmp_path / "memory_reviewer.yaml").write_text(
        f"system: |\n  OVERRIDDEN-{tmp_path.name}\nuser: |\n  {packaged.user.strip().splitlines()[0]}\n", encoding="utf-8")
    m = Memory(milvus_uri=str(shared_db), collection_name=f"cx_{uuid.uuid4().hex[:10]}", embedder=embedder,
               llm=RulesProvider(), prompts_dir=str(tmp_path))
    yield m, tmp_path
    m.close()


def test_processor_uses_the_context_model_and_the_configured_prompts(custom):
    memory, prompts = custom
    reviewer = memory.ctx.processor(MemoryReviewer)
    assert isinstance(memory.ctx, MemoryContext)
    assert reviewer.llm is memory.llm
    assert f"OVERRIDDEN-{prompts.name}" in reviewer.template.system
    # a prompt the folder does not override comes from the package
    assert memory.ctx.processor(TripleExtractor).template.system == load_prompt("triple_extractor").system


def test_every_service_shares_one_context_and_the_writer_takes_its_lock(memory):
    services = [memory._records, memory._hook, memory._lifecycle, memory._transfer, memory._browse, memory._undo,
                memory._graph, memory._consolidation]
    assert all(s.ctx is memory.ctx for s in services)
    assert memory._lifecycle.reader is memory._records and memory._transfer.lister is memory._records
    assert memory._consolidation.decayer is memory._lifecycle and memory._consolidation.graph is memory._graph
    assert memory.ctx.writer.lock is memory.ctx.write_lock is memory.ctx.write_lock
    assert (memory.store, memory.embedder, memory.config, memory.retriever) == (
        memory.ctx.store, memory.ctx.embedder, memory.ctx.config, memory.ctx.retriever)


def test_a_model_swapped_on_the_facade_is_the_one_the_services_ask(memory):
    chat = ScriptedChatModel(replies={"ReviewResult": '{"action": "keep", "reason": "scripted"}'})
    memory.llm = chat
    assert memory.llm is chat and memory.ctx.llm is chat
    assert memory.ctx.processor(MemoryReviewer).llm is chat


def test_override_swaps_the_model_for_the_block_and_restores_the_configured_one_made_later(memory):
    chat = ScriptedChatModel(replies={"ReviewResult": '{"action": "keep", "reason": "scripted"}'})
    with memory.override(llm=chat) as same:
        assert same is memory and memory.llm is chat and memory.ctx.processor(MemoryReviewer).llm is chat
    assert isinstance(memory.llm, RulesProvider)  # none was made before the block: the configured one (offline: the rules)


def test_override_restores_the_model_when_the_block_raises_and_nests(memory):
    outer, inner = ScriptedChatModel(), ScriptedChatModel()
    memory.llm = outer
    with pytest.raises(KeyError), memory.override(llm=inner):
        assert memory.ctx.llm is inner
        raise KeyError("a failing test step")
    assert memory.llm is outer
    with memory.override(llm=inner), memory.override(llm=outer):
        assert memory.llm is outer
    assert memory.llm is outer


def test_an_overridden_model_answers_the_verbs(memory):
    """The model inside the block is the one a verb asks; the one outside is asked nothing."""
    outside = ScriptedChatModel()
    memory.llm = outside
    inside = ScriptedChatModel(replies={"WriteDecision": {"write_episodic": True, "thing": "likes tea"}})
    with memory.override(llm=inside):
        memory.add("I like tea", user_id="tea-drinker", infer=True)
    assert inside.count("WriteDecision") == 1 and outside.count("WriteDecision") == 0


def test_consolidation_runs_its_phases_in_the_listed_order(memory):
    names = [phase.__name__ for phase in consolidation.PHASES]
    assert names == ["episodes", "supersede", "compress", "decay", "graph"]
    memory.add("I moved to Berlin in May", user_id="u", infer=False)
    stats = memory.consolidate("u")
    assert stats.examined == 1 and stats.errors == 0


def test_replacing_the_settings_rebuilds_what_was_made_from_them(shared_db: Path, embedder):
    """The config setter reaches the retriever's parameters, and each write reads the categories anew (they were left stale)."""
    from hippocampus.models import CategorySpec

    m = Memory(milvus_uri=str(shared_db), collection_name=f"cx_{uuid.uuid4().hex[:10]}", embedder=embedder, llm=RulesProvider())
    try:
        diet = CategorySpec(name="diet", keywords=("vegetarian",))
        m.config = m.config.model_copy(update={"categories": (diet,), "rank_hubness_weight": 0.37})
        assert m.ctx.retriever.params.hubness_weight == 0.37 and m.ctx.retriever.params.categories == ("diet",)
        added = m.add("I have been vegetarian for years", "u1", infer=False).ids[0]
        assert m.get(added, "u1").life.category.value == "diet"
    finally:
        m.close()
