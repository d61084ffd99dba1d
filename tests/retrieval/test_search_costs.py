"""What one search costs the store (issue 41): no `count` per search on a local store until the next
write, and a user's cross-language vectors read from the companion in Milvus, in their bucket, by every
search, with no background read of every user's vectors (issue 56: tests/store/test_xvector_reads.py)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from hippocampus import Memory

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


def test_a_question_no_memory_of_another_script_can_answer_leaves_the_model_unloaded(fresh_path: str, embedder, monkeypatch) -> None:
    from hippocampus.embeddings import crosslang

    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        m.add_many([{"text": t, "user_id": "ann"} for t in ["I live in Porto.", "I take the 8:15 train to work."]])
        m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    fresh = crosslang.CrossLangEmbedder()  # this process's model, not loaded yet
    monkeypatch.setitem(crosslang._SHARED, crosslang.NAME, fresh)
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        assert m.store.cross.active and m.store.cross.embedder is fresh
        assert [h.text for h in m.search("where do I live?", user_id="ann").all][0] == "I live in Porto."
        assert fresh._model is None  # ann has no Chinese memory: the stage had nothing to gather
        assert ANSWER in [h.text for h in m.search(QUESTION, user_id="mei", limit=3).all]
        assert fresh._model is not None  # mei has English memories for a Chinese question


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


def test_the_cross_stage_reads_again_no_row_the_dense_search_found(memory: Memory, monkeypatch) -> None:
    """A memory in the other language that e5 gathered itself is not read again by the cross-language stage
    (retrieval/crosslang.py `_gather`), and the hits are exactly those of reading every row."""
    from hippocampus.retrieval import crosslang

    chinese = ["我对青霉素过敏，小时候起过荨麻疹。", *[t for t in OTHERS if crosslang.script_of(t) == "han"]]
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, "I take the 8:15 train to work.", *chinese]])
    question = "which medicine am I allergic to?"
    calls: list[tuple[set[int], list[int]]] = []  # per gathering: the candidates it was told of, the rows it read
    real_gather = crosslang._gather

    def gather(r, q, qx, scripts, known):
        read: list[int] = []
        calls.append((set(known), read))
        real_query = r.store.query

        def query(expr, **kwargs):
            rows = real_query(expr, **kwargs)
            read.extend(int(row["id"]) for row in rows)
            return rows

        monkeypatch.setattr(r.store, "query", query)
        try:
            return real_gather(r, q, qx, scripts, known)
        finally:
            monkeypatch.setattr(r.store, "query", real_query)

    def hits() -> list[tuple[int, float]]:
        return [(h.id, round(h.score, 6)) for h in memory.search(question, user_id="mei", limit=10, mode="dense").all]

    monkeypatch.setattr(crosslang, "_gather", gather)
    skipped, (known, read) = hits(), calls[-1]
    monkeypatch.setattr(crosslang, "_gather", lambda r, q, qx, scripts, known: gather(r, q, qx, scripts, set()))
    everything, (_, read_all) = hits(), calls[-1]
    assert skipped == everything
    found_by_e5 = {i for i in known if crosslang.script_of(memory.get(i, user_id="mei").text) == "han"}
    assert found_by_e5, "e5 gathers a Chinese memory of this small user itself"
    assert not found_by_e5 & set(read), "rows the dense search found are not read again"
    assert found_by_e5 <= set(read_all)  # reading every row: they were read
