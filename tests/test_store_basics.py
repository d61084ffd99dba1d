"""T-MEM-STORE: storing and reading memories on real milvus-lite."""

from __future__ import annotations

import pytest

from hippocampus import InvalidInput, Memory, NotFound


def test_T_MEM_STORE_01_single_memory_is_recalled(memory: Memory):
    res = memory.add("Deployed 3-node redis cluster, config at /opt/redis/", user_id="alice")
    assert res.stored and len(res.ids) == 1
    hits = memory.search("redis cluster config", user_id="alice").episodic
    assert [h.id for h in hits] == res.ids


def test_T_MEM_STORE_03_reopen_restores_everything(fresh_path: str, embedder):
    texts = ["我喜欢爬山", "My sister lives in Lisbon", "Allergic to peanuts 🥜"]
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        ids = [m.add(t, user_id="u1", ts=1_700_000_000 + i).ids[0] for i, t in enumerate(texts)]
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        records = m.get_all("u1")
        assert [r.text for r in records] == texts
        assert [r.id for r in records] == ids
        assert [r.ts for r in records] == [1_700_000_000, 1_700_000_001, 1_700_000_002]
        assert m.search("where does my sister live", user_id="u1").episodic[0].text == texts[1]


def test_injection_user_id_reads_nothing_of_other_tenants(memory: Memory):
    memory.add("alice's secret diary", user_id="alice")
    evil = 'x" or user_id != "'
    assert memory.get_all(evil) == []
    assert len(memory.search("secret diary", user_id=evil)) == 0
    assert memory.reset(evil) == 0
    assert len(memory.get_all("alice")) == 1


def test_get_other_users_memory_is_not_found(memory: Memory):
    mid = memory.add("bob's bank PIN is 1234", user_id="bob").ids[0]
    with pytest.raises(NotFound):
        memory.get(mid, user_id="eve")
    with pytest.raises(NotFound):
        memory.delete(mid, user_id="eve")
    assert memory.get(mid, user_id="bob").text == "bob's bank PIN is 1234"


def test_empty_text_is_refused_and_nothing_written(memory: Memory):
    with pytest.raises(InvalidInput):
        memory.add("   ", user_id="alice")
    assert memory.get_all("alice") == []
