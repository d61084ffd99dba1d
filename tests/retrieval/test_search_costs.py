"""What one search costs the store (issue 41): no `count` per search on a local store until the next
write, and a user's cross-language vectors read from the companion in Milvus, in their bucket, by every
search, with no background read of every user's vectors (issue 56: tests/store/test_xvector_reads.py)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from hippocampus import Memory
from hippocampus.text import script_of

otel = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

QUESTION = "我对哪种药过敏？"
ANSWER = "I'm allergic to penicillin; it gave me hives when I was a kid."
OTHERS = ["我女儿在学钢琴，每周六上课。", "I take the 8:15 train to work.", "我每天早上喝一杯黑咖啡。"]


@pytest.fixture
def traced(shared_db, embedder) -> Iterator[tuple[Memory, InMemorySpanExporter]]:
    """A Memory with `tracing: true` and the SDK's in-memory exporter: every store call a verb makes is a
    client span (docs: observability; operation, collection, partitions, rows), the documented seam we count."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, otel.TracerProvider):
        trace.set_tracer_provider(otel.TracerProvider())
        provider = trace.get_tracer_provider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[attr-defined]
    with Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder, tracing=True) as m:
        yield m, exporter
    exporter.shutdown()


def _store_calls(exporter: InMemorySpanExporter, operations: tuple[str, ...], collection: str) -> list[dict]:
    return [dict(s.attributes or {}) for s in exporter.get_finished_spans()
            if (s.attributes or {}).get("db.operation.name") in operations
            and (s.attributes or {}).get("db.collection.name") == collection]


def _spy_counts(memory: Memory, monkeypatch) -> list[str]:
    calls: list[str] = []
    real = memory.store.count
    monkeypatch.setattr(memory.store, "count", lambda expr="", partition=None: calls.append(expr) or real(expr, partition))
    return calls


def test_search_issues_no_count_until_the_next_write(memory: Memory, monkeypatch) -> None:
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])  # episodic only: the other kind is empty
    calls = _spy_counts(memory, monkeypatch)
    first = [h.text for h in memory.search("which medicine am I allergic to?", user_id="mei").all]
    assert ANSWER in first
    calls.clear()
    again = [h.text for h in memory.search("which medicine am I allergic to?", user_id="mei").all]
    memory.search("what do I drink in the morning?", user_id="mei")
    assert calls == [] and again == first
    new = memory.add("I'm also allergic to ibuprofen.", user_id="mei", infer=False).ids[0]  # a write: counts are stale
    hits = memory.search("which medicine am I allergic to?", user_id="mei").all
    assert new in {h.id for h in hits}


def test_every_cross_language_search_reads_the_companion_in_the_users_bucket(traced) -> None:
    from hippocampus.store.buckets import bucket_of

    memory, exporter = traced
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    memory.add("I'm allergic to penicillin too.", user_id="bob", infer=False)
    cross = memory.store.cross
    threads = set(threading.enumerate())
    exporter.clear()
    first = [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all]
    assert ANSWER in first and "too" not in " ".join(first)
    for _ in range(2):
        assert [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all] == first
    reads = _store_calls(exporter, ("search",), cross.name)
    assert [tuple(r.get("hippocampus.store.partitions", ())) for r in reads] == [(bucket_of("mei"),)] * 3  # Milvus answered each, from mei's bucket alone
    assert set(threading.enumerate()) <= threads  # and nothing reads behind the searches
    new = memory.add("我对青霉素过敏。", user_id="zoe", infer=False).ids[0]  # a user first written now
    assert new in {h.id for h in memory.search("which medicine am I allergic to?", user_id="zoe").all}


def test_a_question_no_memory_of_another_script_can_answer_leaves_the_model_unloaded(fresh_path: str, embedder) -> None:
    from hippocampus.embeddings.crosslang import CrossLangEmbedder

    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        m.add_many([{"text": t, "user_id": "ann"} for t in ["I live in Porto.", "I take the 8:15 train to work."]])
        m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        fresh = m.store.cross.embedder = CrossLangEmbedder()  # as a new process has it: not loaded yet
        assert m.store.cross.active and not fresh.loaded
        assert [h.text for h in m.search("where do I live?", user_id="ann").all][0] == "I live in Porto."
        assert not fresh.loaded  # ann has no Chinese memory: the stage had nothing to gather
        assert ANSWER in [h.text for h in m.search(QUESTION, user_id="mei", limit=3).all]
        assert fresh.loaded  # mei has English memories for a Chinese question


def test_a_large_write_reaches_the_companion_page_by_page(traced, monkeypatch) -> None:
    from hippocampus.store import xvector

    memory, exporter = traced
    monkeypatch.setattr(xvector, "WRITE_PAGE", 2)
    exporter.clear()
    ids = memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS, "我住在杭州。"]])
    pages = [r["hippocampus.store.rows"] for r in _store_calls(exporter, ("insert", "upsert"), memory.store.cross.name)]
    assert pages == [2, 2, 1]
    stored = memory.store.client.query(memory.store.cross.name, filter="id >= 0", output_fields=["id"])
    assert {int(r["id"]) for r in stored} == set(ids)
    assert ANSWER in [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all]


def test_the_cross_stage_reads_again_no_row_the_dense_search_found(traced) -> None:
    """A memory in the other language that e5 gathered itself is not read again by the cross-language stage
    (retrieval/crosslang.py `gather`): a small user's every memory is a dense candidate, so the search reads
    no row of the memories collection (its scope's counts are kept until the next write); a user with more
    memories than the dense search gathers has the others read."""
    memory, exporter = traced
    chinese = ["我对青霉素过敏，小时候起过荨麻疹。", *[t for t in OTHERS if script_of(t) == "han"]]
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, "I take the 8:15 train to work.", *chinese]])
    notes = [f"Note {i}: a quiet week, nothing new at work on day {i}." for i in range(30)]
    memory.add_many([{"text": t, "user_id": "lin"} for t in [ANSWER, *chinese, *notes]])
    question, collection, cross = "which medicine am I allergic to?", memory.store.collection, memory.store.cross.name

    def search(user: str, limit: int) -> tuple[list[str], list[dict], list[dict]]:
        memory.search(question, user_id=user, limit=limit, mode="dense")  # the scope's counts, kept after this one
        exporter.clear()
        hits = [h.text for h in memory.search(question, user_id=user, limit=limit, mode="dense").all]
        return hits, _store_calls(exporter, ("query",), collection), _store_calls(exporter, ("search",), cross)

    hits, reads, gathered = search("mei", 10)
    assert hits[:2] == [ANSWER, chinese[0]] and set(hits) >= set(chinese)  # placed by the cross stage
    assert [g["db.response.returned_rows"] for g in gathered] == [len(chinese)]  # the stage gathered them all
    assert reads == []  # ... and read none: e5 had found them
    hits, reads, gathered = search("lin", 2)
    assert hits == [ANSWER, chinese[0]] and gathered
    assert 0 < sum(r["db.response.returned_rows"] for r in reads) <= len(chinese)  # the rows e5 missed, no more


def test_the_gathering_returns_the_same_cosines_whatever_the_candidates_it_skips(memory: Memory) -> None:
    """What makes skipping those rows exact: the gathering (crosslang.gather) returns the same USE cosines and
    floor whichever candidates it is told of, and the rows of the others, nearest first."""
    from hippocampus.retrieval import crosslang
    from hippocampus.retrieval.query import Query

    chinese = ["我对青霉素过敏，小时候起过荨麻疹。", *[t for t in OTHERS if script_of(t) == "han"]]
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, "I take the 8:15 train to work.", *chinese]])
    question, r = "which medicine am I allergic to?", memory.retriever
    q = Query(text=question, vector=None, mode="dense", scope=r.scope("mei"), part=memory.store.partition_for("mei") or "",
              depth=20, use_context=False, include_superseded=False, now=None, user_id="mei", plain=True)
    qx = memory.store.cross.embedder.encode([question], role="query")[0]
    rows, floor, near = crosslang.gather(r, q, qx, ["han"], set())
    assert sorted(row["text"] for row in rows) == sorted(chinese)
    assert [int(row["id"]) for row in rows] == sorted(near, key=lambda i: -near[i])  # nearest first
    for known in ({int(rows[0]["id"])}, set(near)):
        kept, floor_, near_ = crosslang.gather(r, q, qx, ["han"], known)
        assert (floor_, near_) == (floor, near)
        assert [row["id"] for row in kept] == [row["id"] for row in rows if int(row["id"]) not in known]
