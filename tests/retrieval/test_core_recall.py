"""Seed 000's T-MEM-RECALL-01..06, adapted: `Memory.search` on real milvus-lite.

Relations, not absolute numbers: the offline e5 model scores unrelated sentences around 0.78, so
"low similarity" means below a related query's and below the model's configured `t_amb_low`.
"""

from __future__ import annotations

import pytest

from hippocampus import Memory
from hippocampus.testing import DeterministicEmbedder

REDIS = "Deployed 3-node redis cluster, config at /opt/redis/"
DISTRACTORS = [
    "Went to the grocery store and bought apples",
    "我妹妹住在杭州，在读研究生",
    "Booked a dentist appointment for Thursday",
    "Postgres backups run every night at 2am",
    "周末去爬了香山",
    "Started learning to play the guitar",
]
MODES = ["hybrid", "dense", "bm25"]


@pytest.fixture
def redis_memory(memory: Memory) -> tuple[Memory, int]:
    ids = memory.add_many([{"text": t, "user_id": "ops", "ts": 1_700_000_000 + i} for i, t in enumerate(DISTRACTORS)])
    mid = memory.add(REDIS, user_id="ops", ts=1_700_000_100).ids[0]
    assert mid not in ids
    memory.add(REDIS, user_id="someone-else")  # same text, other tenant: never recalled for ops
    return memory, mid


@pytest.mark.parametrize("mode", MODES)
def test_T_MEM_RECALL_01_cross_lingual_query_ranks_the_redis_memory_first(redis_memory, mode: str):
    memory, mid = redis_memory
    hits = memory.search("redis 集群的配置在哪里", user_id="ops", mode=mode).episodic
    assert hits[0].id == mid
    assert all(h.memory.user_id == "ops" for h in hits)


def test_T_MEM_RECALL_01_english_paraphrase_ranks_first(redis_memory):
    memory, mid = redis_memory
    assert memory.search("where is the redis configuration?", user_id="ops", mode="dense").episodic[0].id == mid


def test_T_MEM_RECALL_02_limit_returns_exactly_k(memory: Memory):
    memory.add_many([{"text": f"Note {i}: {t}", "user_id": "u"} for i, t in enumerate(DISTRACTORS * 3 + [REDIS, "x"])])
    assert len(memory.get_all("u")) == 20
    for mode in MODES:
        assert len(memory.search("note", user_id="u", limit=3, mode=mode).episodic) == 3
    assert len(memory.search("what did I do", user_id="u", limit=20, mode="dense").episodic) == 20
    assert len(memory.search("what did I do", user_id="u", limit=50, mode="dense").episodic) == 20  # min(k, matching)
    assert len(memory.search("note", user_id="u", limit=0)) == 0


def test_T_MEM_RECALL_02_configured_k_applies_without_a_limit(shared_db, embedder):
    with Memory(milvus_uri=str(shared_db), collection_name="recall02k", embedder=embedder, k_episodic=3, k_semantic=2) as m:
        m.add_many([{"text": f"episode {i}", "user_id": "u"} for i in range(8)]
                   + [{"text": f"fact {i}", "user_id": "u", "memory_type": "semantic"} for i in range(8)])
        result = m.search("episode fact", user_id="u")
        assert len(result.episodic) == 3 and len(result.semantic) == 2
        m.store.client.drop_collection("recall02k")
        m.store.client.drop_collection("recall02k_history")


@pytest.mark.parametrize("mode", MODES)
def test_T_MEM_RECALL_03_empty_memory_returns_nothing(memory: Memory, mode: str):
    result = memory.search("redis 集群的配置在哪里", user_id="nobody", mode=mode)
    assert result.episodic == [] and result.semantic == [] and len(result) == 0


def test_T_MEM_RECALL_04_unrelated_query_scores_low(memory: Memory):
    ids = memory.add_many([{"text": t, "user_id": "ops"} for t in (
        REDIS, "Redis cluster expanded to 5 nodes", "Redis 主从切换演练在周五完成", "Set maxmemory-policy to allkeys-lru on redis")])
    t_amb_low, _ = memory.config.merge_thresholds
    related = memory.search("redis cluster config", user_id="ops", mode="dense").episodic
    unrelated = memory.search("天气怎么样", user_id="ops", mode="dense").episodic
    assert related[0].id in ids and {h.id for h in unrelated} == set(ids)  # nothing else to return
    best_unrelated = max(h.similarity for h in unrelated)
    assert best_unrelated < t_amb_low  # below the model's "possibly the same event" threshold
    assert best_unrelated < related[0].similarity - 0.05
    mean = lambda hits: sum(h.similarity for h in hits) / len(hits)  # noqa: E731
    assert mean(unrelated) < mean(related)  # on average the redis memories are closer to a redis question


def test_T_MEM_RECALL_05_old_and_new_versions_are_both_returned_with_their_times(memory: Memory):
    memory.add_many([{"text": t, "user_id": "ops", "ts": 1_600_000_000 + i} for i, t in enumerate(DISTRACTORS)])
    old = memory.add("Redis cluster deployed with 3 nodes", user_id="ops", ts=1_700_000_000).ids[0]
    new = memory.add("Redis cluster expanded to 5 nodes", user_id="ops", ts=1_710_000_000).ids[0]
    for mode in MODES:
        hits = memory.search("redis cluster 有几个节点", user_id="ops", limit=3, mode=mode).episodic
        top2 = {h.id: h.memory for h in hits[:2]}
        assert set(top2) == {old, new}, mode
        assert top2[new].ts > top2[old].ts  # the caller (an LLM) can tell which is current
        assert top2[old].metadata["time"].startswith("2023-11-14") and top2[new].metadata["time"].startswith("2024-03-09")


def test_T_MEM_RECALL_06_a_thousand_memories_still_recall_the_right_one(shared_db):
    """1,000 memories of one user plus another tenant's; correctness only (speed is in scripts/bench.py)."""
    cities = ["Berlin", "Lisbon", "Hangzhou", "Osaka", "Lima", "Oslo", "Cairo", "Quito", "Perth", "Seoul"]
    things = ["bike", "violin", "laptop", "kettle", "tent", "camera", "sofa", "printer", "kayak", "lamp"]
    texts = [f"In {cities[i % 10]} I bought a {things[(i // 10) % 10]} on visit {i // 100}, receipt {i}" for i in range(1000)]
    with Memory(milvus_uri=str(shared_db), collection_name="recall06", embedder=DeterministicEmbedder()) as m:
        ids = m.add_many([{"text": t, "user_id": "big", "ts": 1_700_000_000 + i} for i, t in enumerate(texts)])
        m.add_many([{"text": t, "user_id": "other"} for t in texts[:50]])
        assert m.stats("big")["total"] == 1000
        for i in (0, 417, 999):
            for mode in ("dense", "hybrid"):
                hits = m.search(texts[i], user_id="big", limit=5, mode=mode).episodic
                assert hits[0].id == ids[i], (i, mode)
                assert len(hits) == 5 and all(h.memory.user_id == "big" for h in hits)
        hits = m.search("receipt 417", user_id="big", limit=10, mode="bm25").episodic
        assert hits[0].id == ids[417]
        assert len(m.search("bike", user_id="big", limit=1000, mode="dense").episodic) == 1000
        m.store.client.drop_collection("recall06")
        m.store.client.drop_collection("recall06_history")
