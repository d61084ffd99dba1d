"""What one search costs the store (issue 41): no `count` per search on a local store until the next
write, and a user's cross-language vectors read in the background, never inside their first search,
and kept complete when a write lands during that read (store/xvector_copy.py `Loader`)."""

from __future__ import annotations

import threading

from hippocampus import Memory

QUESTION = "我对哪种药过敏？"
ANSWER = "I'm allergic to penicillin; it gave me hives when I was a kid."
OTHERS = ["我女儿在学钢琴，每周六上课。", "I take the 8:15 train to work.", "我每天早上喝一杯黑咖啡。"]


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


def test_a_first_search_reads_no_cross_vectors_the_second_starts_one_read_and_later_ones_use_memory(memory: Memory, monkeypatch) -> None:
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    memory.add("I'm allergic to penicillin too.", user_id="bob", infer=False)
    cross = memory.store.cross
    reads: list[str] = []
    real_pages = cross._pages
    go = threading.Event()

    def pages():  # the background read waits for the first search to end: Milvus must have answered it
        reads.append(threading.current_thread().name)
        assert go.wait(120)
        yield from real_pages()

    monkeypatch.setattr(cross, "_pages", pages)
    searched: list[str] = []
    real_call = memory.store._call

    def call(method, *args, **kwargs):
        if method == "search" and args and args[0] == cross.name:
            searched.append(method)
        return real_call(method, *args, **kwargs)

    monkeypatch.setattr(memory.store, "_call", call)
    first = [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all]
    assert ANSWER in first and searched == ["search"]  # Milvus answered
    assert reads == [] and cross.wait_loaded(timeout=0)  # a process that searches once (a CLI) reads nothing
    assert [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all] == first  # the second starts the read
    assert searched == ["search", "search"]  # ... and Milvus answers it too
    go.set()
    assert cross.wait_loaded(timeout=60)
    assert reads and threading.main_thread().name not in reads  # read by the loader, not by the search
    assert set(cross._users) == {"mei", "bob"}  # every user at once
    searched.clear()
    assert [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all] == first and searched == []
    new = memory.add("我对青霉素过敏。", user_id="zoe", infer=False).ids[0]  # a user first written after the read
    assert new in cross._users["zoe"].pos and searched == []


def test_a_write_during_the_background_read_is_not_lost(memory: Memory, monkeypatch) -> None:
    ids = memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    cross = memory.store.cross
    real_pages = cross._pages
    added: list[int] = []

    def pages_then_writes():
        for page in real_pages():
            yield page
            if not added:  # after the rows were read, before they are installed: a write and a delete
                added.extend(memory.add("我对青霉素过敏，小时候起过疹子。", user_id="mei", infer=False).ids)
                memory.delete(ids[1], user_id="mei")

    monkeypatch.setattr(cross, "_pages", pages_then_writes)
    memory.search(QUESTION, user_id="mei")
    memory.search(QUESTION, user_id="mei")  # the second search starts the read
    assert cross.wait_loaded(timeout=60) and cross.all_loaded
    assert added and added[0] in cross._users["mei"].pos and ids[1] not in cross._users["mei"].pos
    assert set(cross._users["mei"].ids) == {int(r["id"]) for r in memory.store.query('user_id == "mei"', ["id"])}


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


def test_once_the_vectors_are_in_memory_a_one_language_user_costs_no_query_embedding(memory: Memory, monkeypatch) -> None:
    memory.add_many([{"text": t, "user_id": "ann"} for t in ["I live in Porto.", "I take the 8:15 train to work."]])
    memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    cross = memory.store.cross
    memory.search("where do I live?", user_id="ann")
    memory.search("where do I live?", user_id="ann")  # the second search starts the read
    assert cross.wait_loaded(timeout=60) and cross.all_loaded
    encoded: list[list[str]] = []
    real = cross.embedder.encode
    monkeypatch.setattr(cross.embedder, "encode", lambda texts, role="passage": encoded.append(list(texts)) or real(texts, role=role))
    assert [h.text for h in memory.search("where do I live?", user_id="ann").all][0] == "I live in Porto."
    assert encoded == []  # ann has no Chinese memory: nothing to gather, nothing embedded
    assert ANSWER in [h.text for h in memory.search(QUESTION, user_id="mei", limit=3).all] and encoded == [[QUESTION]]


def test_a_large_write_reaches_the_companion_page_by_page(memory: Memory, monkeypatch) -> None:
    from hippocampus.store import xvector

    monkeypatch.setattr(xvector, "WRITE_PAGE", 2)
    pages: list[int] = []
    real_call = memory.store._call

    def call(method, *args, **kwargs):
        if method in ("insert", "upsert") and args and args[0] == memory.store.cross.name:
            pages.append(len(kwargs["data"]))
        return real_call(method, *args, **kwargs)

    monkeypatch.setattr(memory.store, "_call", call)
    ids = memory.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS, "我住在杭州。"]])
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
    memory.search(question, user_id="mei")
    memory.search(question, user_id="mei")  # the second search starts the background read of the cross vectors
    assert memory.store.cross.wait_loaded(60)
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


def test_closing_the_store_stops_the_background_read(fresh_path: str, embedder, caplog) -> None:
    """A process that searched twice and exits closes its store while the read of every user's vectors may
    still run: the read stops after its page in progress, before the client goes (pymilvus logged a screen
    of reconnection failures on stderr when the read outlived the store)."""
    m = Memory(milvus_uri=fresh_path, embedder=embedder)
    m.add_many([{"text": t, "user_id": "mei"} for t in [ANSWER, *OTHERS]])
    cross = m.store.cross
    real_pages, started, release = cross._pages, threading.Event(), threading.Event()

    def pages():  # a page, then a read that outlasts the searches: the store closes meanwhile
        started.set()
        assert release.wait(60)
        yield from real_pages()

    cross._pages = pages
    m.search(QUESTION, user_id="mei")
    m.search(QUESTION, user_id="mei")
    assert started.wait(60)
    thread = cross._loader._thread
    assert thread is not None and thread.is_alive()
    threading.Timer(0.2, release.set).start()  # the page in progress ends a little after close begins
    with caplog.at_level("WARNING"):
        m.close()
    assert not thread.is_alive() and not cross.all_loaded
    assert not [r for r in caplog.records if r.levelno >= 30], [r.getMessage() for r in caplog.records]
