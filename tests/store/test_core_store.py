"""Seed 000's T-MEM-STORE-01..07, adapted: storing, persisting and reopening memories on real milvus-lite."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from milvus_lite import DataType

from hippocampus import InvalidInput, Memory, NotFound, SchemaMismatchError, StoreCorruptedError, StoreError
from hippocampus.store.lite_client import LiteClient
from hippocampus.testing import DeterministicEmbedder

REDIS = "Deployed 3-node redis cluster, config at /opt/redis/"


def files_under(path: str) -> list[Path]:
    return [p for p in Path(path).rglob("*") if p.is_file()]


def test_T_MEM_STORE_01_single_memory_is_recalled_and_on_disk(fresh_path: str, embedder):
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        res = m.add(REDIS, user_id="alice")
        assert res.stored and len(res.ids) == 1
        hits = m.search("redis cluster config", user_id="alice").episodic
        assert [h.id for h in hits] == res.ids
    assert (Path(fresh_path) / "collections" / "memories").is_dir()
    assert files_under(fresh_path)
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:  # a new process would see the same
        assert m.get(res.ids[0], user_id="alice").text == REDIS


def test_T_MEM_STORE_02_ten_memories_all_retrievable_and_persisted(fresh_path: str, embedder):
    texts = [f"{topic} on day {i}" for i, topic in enumerate(
        ["Bought a bike", "Called mom", "写了周报", "Fixed the CI pipeline", "去医院体检", "Read Dune", "Paid rent",
         "学了一首新歌", "Deployed redis", "Planted tomatoes"])]
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        ids = [m.add(t, user_id="u", ts=1_700_000_000 + i).ids[0] for i, t in enumerate(texts)]
        assert len(set(ids)) == 10
        found = {h.id for h in m.search("what did I do", user_id="u", limit=10, mode="dense").episodic}
        assert found == set(ids)
        for text, mid in zip(texts, ids):
            assert m.search(text, user_id="u", limit=1, mode="dense").episodic[0].id == mid
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        assert [r.text for r in m.get_all("u")] == texts


def test_T_MEM_STORE_03_reopen_restores_text_time_and_embedding(fresh_path: str, embedder):
    texts = ["我喜欢爬山", "My sister lives in Lisbon", "Allergic to peanuts 🥜"]
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        ids = [m.add(t, user_id="u1", chat_id=f"c{i}", ts=1_700_000_000 + i, metadata={"n": i}).ids[0]
               for i, t in enumerate(texts)]
        before = m.store.vectors(ids)
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        records = m.get_all("u1")
        assert [r.id for r in records] == ids
        assert [r.text for r in records] == texts
        assert [r.ts for r in records] == [1_700_000_000, 1_700_000_001, 1_700_000_002]
        assert [r.chat_id for r in records] == ["c0", "c1", "c2"]
        assert [r.metadata["n"] for r in records] == [0, 1, 2]
        after = m.store.vectors(ids)
        expected = embedder.encode(texts, role="passage")
        for i, mid in enumerate(ids):
            assert np.allclose(after[mid], before[mid], atol=1e-6)
            assert np.allclose(after[mid], expected[i], atol=1e-5)
        assert m.search("where does my sister live", user_id="u1").episodic[0].text == texts[1]


def test_T_MEM_STORE_04_missing_store_opens_empty_and_works(tmp_path: Path, embedder):
    path = tmp_path / "not" / "yet" / "there" / "memories.db"
    with Memory(milvus_uri=str(path), embedder=embedder, create_store_dir=True) as m:  # asked for: a new directory
        assert m.get_all("u") == []
        assert len(m.search("anything", user_id="u")) == 0
        assert m.stats()["total"] == 0
        mid = m.add("first memory in a new store", user_id="u").ids[0]
        assert m.search("first memory", user_id="u").episodic[0].id == mid
    assert path.is_dir()


def test_T_MEM_STORE_05_a_file_at_the_store_path_is_refused_untouched(tmp_path: Path, embedder):
    path = tmp_path / "memories.db"
    path.write_text('{"this is": "not a milvus-lite store"')
    with pytest.raises(SchemaMismatchError) as info:
        Memory(milvus_uri=str(path), embedder=embedder)
    assert isinstance(info.value, StoreError) and str(path) in str(info.value)
    assert path.read_text() == '{"this is": "not a milvus-lite store"'


def test_T_MEM_STORE_05_a_garbage_directory_is_refused_untouched(tmp_path: Path, embedder):
    path = tmp_path / "memories.db"
    path.mkdir()
    (path / "notes.txt").write_bytes(b"\x00\xffgarbage")
    with pytest.raises(StoreCorruptedError):
        Memory(milvus_uri=str(path), embedder=embedder)
    assert sorted(p.name for p in path.iterdir()) == ["notes.txt"]


def test_T_MEM_STORE_05_a_damaged_collection_is_a_store_error(fresh_path: str, embedder):
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        m.add("soon damaged", user_id="u")
    schema = Path(fresh_path) / "collections" / "memories" / "schema.json"
    schema.write_text("{ not json")
    with pytest.raises(StoreError):
        Memory(milvus_uri=fresh_path, embedder=embedder)
    assert schema.read_text() == "{ not json"


def test_T_MEM_STORE_05_a_foreign_collection_is_a_schema_mismatch(fresh_path: str, embedder):
    client = LiteClient(fresh_path)
    schema = client.create_schema(auto_id=True)
    schema.add_field("pk", DataType.INT64, is_primary=True)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=384)
    index = client.prepare_index_params()
    index.add_index("embedding", index_type="AUTOINDEX", metric_type="L2")
    client.create_collection("memories", schema=schema, index_params=index)
    client.insert("memories", [{"embedding": [0.1] * 384}])
    client.close()  # the last client of the path: milvus-lite's directory lock is released
    with pytest.raises(SchemaMismatchError, match="not created by this version"):
        Memory(milvus_uri=fresh_path, embedder=embedder)
    with Memory(milvus_uri=fresh_path, embedder=embedder, collection_name="mine") as m:  # the file is fine otherwise
        assert m.get_all("u") == []


def test_T_MEM_STORE_06_eight_threads_store_every_memory_exactly_once(shared_db: Path):
    threads, per_thread = 8, 12
    with Memory(milvus_uri=str(shared_db), collection_name="store06", embedder=DeterministicEmbedder()) as m:
        errors: list[BaseException] = []
        ids: list[int] = []
        lock = threading.Lock()
        start = threading.Barrier(threads)

        def worker(t: int) -> None:
            start.wait()
            try:
                for i in range(per_thread):
                    got = m.add(f"thread {t} memory {i}", user_id=f"user{t % 3}", chat_id=f"t{t}").ids
                    with lock:
                        ids.extend(got)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        assert errors == []
        assert len(ids) == len(set(ids)) == threads * per_thread
        stored = [r for u in range(3) for r in m.get_all(f"user{u}")]
        assert sorted(r.text for r in stored) == sorted(f"thread {t} memory {i}" for t in range(threads) for i in range(per_thread))
        assert sorted(r.id for r in stored) == sorted(ids)
        assert m.stats()["total"] == threads * per_thread
        for r in stored:  # each row carries its own thread's user and chat
            t = int(r.text.split()[1])
            assert r.user_id == f"user{t % 3}" and r.chat_id == f"t{t}"
        m.store.client.drop_collection("store06")
        m.store.client.drop_collection("store06_history")


UNICODE_TEXTS = [
    "我妹妹住在杭州，她喜欢🐼和火锅🍲",
    "Emoji family: 👨‍👩‍👧‍👦, flags 🇨🇳🇬🇧, skin tone 👍🏽",
    'Quotes " and \' and backslash \\ and a path C:\\Users\\lin',
    "Tabs\tand\nnewlines\r\nkept",
    "Combining: e\u0301 vs \u00e9; RTL: שלום مرحبا; math: ∑∫√∞",
    "x\" or user_id != \"",
    "Zero width\u200bjoiner\u200d and BOM\ufeff inside",
    "日本語とEnglish混在、ハングル한국어も",
]


def test_T_MEM_STORE_07_utf8_content_is_lossless_across_reopen(fresh_path: str, embedder):
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        ids = [m.add(t, user_id="用户🙂", ts=1_700_000_000 + i).ids[0] for i, t in enumerate(UNICODE_TEXTS)]
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        records = m.get_all("用户🙂")
        assert [r.text for r in records] == UNICODE_TEXTS
        assert [r.id for r in records] == ids
        assert all(r.metadata["thing"] == r.text for r in records)
        assert m.get(ids[0], user_id="用户🙂").user_id == "用户🙂"


# ---------------------------------------------------------------- kept from test_store_basics.py
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


def test_update_keeps_the_id_and_history_survives_delete(memory: Memory):
    mid = memory.add("Redis cluster deployed with 3 nodes", user_id="ops").ids[0]
    updated = memory.update(mid, "Redis cluster expanded to 5 nodes", user_id="ops", metadata={"ticket": "OPS-7"})
    assert updated.id == mid
    rec = memory.get(mid, user_id="ops")
    assert rec.text == "Redis cluster expanded to 5 nodes" and rec.metadata["ticket"] == "OPS-7"
    assert memory.search("how many redis nodes", user_id="ops").episodic[0].id == mid
    memory.delete(mid, user_id="ops")
    with pytest.raises(NotFound):
        memory.get(mid, user_id="ops")
    events = memory.history(mid, user_id="ops")
    assert [e.action.value for e in events] == ["created", "updated", "deleted"]
    assert events[1].old_text == "Redis cluster deployed with 3 nodes"
    assert events[1].new_text == "Redis cluster expanded to 5 nodes"
    assert all(e.actor == "api" and e.at > 0 for e in events)


# ---------------------------------------------------------------- reopen, dimension refusal, event times
class _Tiny8d(DeterministicEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=8, model_name="test/tiny-8d")


def test_reopen_after_close_and_close_is_idempotent(fresh_path: str, embedder):
    m = Memory(milvus_uri=fresh_path, embedder=embedder)
    mid = m.add("before close", user_id="u").ids[0]
    m.close()
    m.close()  # twice is harmless
    with pytest.raises(StoreError, match="closed"):
        m.get(mid, user_id="u")
    with Memory(milvus_uri=fresh_path, embedder=embedder) as again:
        assert again.get(mid, user_id="u").text == "before close"
        again.add("after reopen", user_id="u")
    with Memory(milvus_uri=fresh_path, embedder=embedder) as third:
        assert sorted(r.text for r in third.get_all("u")) == ["after reopen", "before close"]
        assert [e.action.value for e in third.history(mid, user_id="u")] == ["created"]


def test_an_8d_embedder_on_a_384d_store_is_refused_and_changes_nothing(fresh_path: str, embedder):
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        mid = m.add("stored with e5, 384-d", user_id="u").ids[0]
    snapshot = {p: p.stat().st_size for p in files_under(fresh_path) if "wal" not in p.parts}
    with pytest.raises(SchemaMismatchError, match="384-d") as info:
        Memory(milvus_uri=fresh_path, embedder=_Tiny8d())
    assert "test/tiny-8d" in str(info.value) and "8-d" in str(info.value)
    assert {p: p.stat().st_size for p in files_under(fresh_path) if "wal" not in p.parts} == snapshot
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:  # the original embedder still works
        assert m.get(mid, user_id="u").text == "stored with e5, 384-d" and m.stats()["total"] == 1
    with Memory(milvus_uri=fresh_path, embedder=_Tiny8d(), collection_name="tiny") as tiny:  # its own collection is fine
        assert tiny.store.dim == 8
        tiny.add("an 8-d memory", user_id="u")


def test_event_time_zero_is_kept_and_out_of_range_times_are_refused(memory: Memory):
    from datetime import datetime, timezone

    mid = memory.add("the epoch", user_id="u", ts=0).ids[0]
    rec = memory.get(mid, user_id="u")
    assert rec.ts == 0 and rec.metadata["time"].startswith("1970-01-01")
    last = memory.add("the last second of 9999", user_id="u", ts=253_402_300_799).ids[0]
    assert memory.get(last, user_id="u").metadata["time"].startswith("9999-12-31T23:59:59")
    assert memory.add_many([{"text": "epoch too", "user_id": "u", "ts": 0}]) and memory.get_all("u")[0].ts == 0
    for bad in (-1, 253_402_300_800, 2**40, float("nan"), float("inf"), "next tuesday-ish", "1969-07-20",
                datetime(1969, 7, 20, tzinfo=timezone.utc)):
        with pytest.raises(InvalidInput):
            memory.add("bad time", user_id="u", ts=bad)
    assert len(memory.get_all("u")) == 3
    iso = memory.add("a date in ISO 8601", user_id="u", ts="2024-01-01T00:00:00Z").ids[0]  # as REST takes it
    assert memory.get(iso, user_id="u").ts == 1_704_067_200


def test_a_new_store_has_its_indexes_built_and_answers(tmp_path, embedder):
    """A new local store's indexes are made with the collection (connection.create_indexed, the same path a
    server's take without pymilvus' sleeping index wait) and are built when the store opens."""
    with Memory(milvus_uri=str(tmp_path / "new.db"), embedder=embedder) as m:
        client, name = m.store.client, m.store.collection
        assert "vector" in client.list_indexes(name)
        assert all(client.describe_index(name, n)["state"] == "Finished" for n in client.list_indexes(name))
        assert m.add("the indexes answer", user_id="u").stored and m.search("indexes", user_id="u").all
