"""The context stage (retrieval/context.py): chat neighbours, the chat and a named `who` lend a
memory relevance. Pure functions first, then real milvus-lite with the offline embedder."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hippocampus.retrieval.context import ContextParams, apply_context, names_in, neighbours, windows
from hippocampus.retrieval.fusion import Candidate

OFF = ContextParams(neighbour_weight=0, chat_weight=0, who_weight=0)


def _cand(i: int, score: float, chat: str = "c", ts: int = 0, who: str = "Ann", kind: str = "episodic") -> Candidate:
    row = {"id": i, "chat_id": chat, "ts": ts, "who": who, "memory_type": kind, "text": f"t{i}"}
    return Candidate(row=row, similarity=score, score=score)


def test_names_in_matches_whole_names_only():
    assert names_in("What did Melanie paint?", ["Melanie", "Caroline"]) == {"Melanie"}
    assert names_in("what did melanie paint", ["Melanie"]) == {"Melanie"}
    assert names_in("What did Melanie paint?", ["Mel"]) == set()
    assert names_in("小明昨天去了哪里", ["小明", "小红"]) == {"小明"}
    assert names_in("anything", ["", "  "]) == set()
    assert names_in("Did C++ (the name) say so", ["C++"]) == {"C++"}


def test_windows_merge_overlapping_ranges_of_one_chat():
    targets = [{"chat_id": "a", "ts": 100}, {"chat_id": "a", "ts": 150}, {"chat_id": "a", "ts": 1000}, {"chat_id": "b", "ts": 120}]
    assert windows(targets, 60) == [("a", 40, 210), ("a", 940, 1060), ("b", 60, 180)]


def test_neighbours_are_the_nearest_turns_of_the_same_chat_within_the_window():
    rows = [
        {"id": 1, "chat_id": "a", "ts": 10},
        {"id": 2, "chat_id": "a", "ts": 20},
        {"id": 3, "chat_id": "a", "ts": 30},
        {"id": 4, "chat_id": "a", "ts": 500},
        {"id": 5, "chat_id": "b", "ts": 21},
    ]
    near = neighbours([rows[1], rows[2], rows[3]], rows, window_seconds=60)
    assert near == {2: [1, 3], 3: [2], 4: []}  # 4 is 470 s from 3: no neighbour; b's turn never counts


def test_neighbours_order_equal_times_by_id():
    rows = [{"id": i, "chat_id": "a", "ts": 5} for i in (7, 3, 9)]
    assert neighbours([rows[0]], rows, 0) == {7: [3, 9]}


def test_all_weights_zero_is_the_identity():
    items = [_cand(i, s) for i, s in enumerate([0.9, 0.5, 0.7])]
    out = apply_context(items, "What did Ann say?", OFF, {0: [1], 1: [0, 2]}, {})
    assert [c.id for c in out] == [0, 1, 2]
    assert [c.score for c in out] == [0.9, 0.5, 0.7]


def test_a_relevant_neighbour_lifts_a_vague_answer():
    # 1 = "Yes, with my sister" (vague alone), its neighbour 9 = the question it answers (not a candidate)
    items = [_cand(0, 0.80, chat="x", ts=0), _cand(1, 0.78, chat="y", ts=5)]
    params = ContextParams(neighbour_weight=0.3, chat_weight=0, who_weight=0)
    out = apply_context(items, "q", params, {0: [], 1: [9]}, {9: (0.85, "Bob")})
    assert [c.id for c in out] == [1, 0]
    assert out[0].parts["neighbour"] == pytest.approx(0.3 * 0.85)


def test_chat_bonus_prefers_the_chat_of_the_best_match():
    items = [_cand(0, 0.9, chat="x"), _cand(1, 0.6, chat="x"), _cand(2, 0.62, chat="y")]
    params = ContextParams(neighbour_weight=0, chat_weight=0.3, who_weight=0)
    out = apply_context(items, "q", params)
    assert [c.id for c in out] == [0, 1, 2]


def test_who_bonus_needs_the_name_in_the_query():
    items = [_cand(0, 0.70, who="Bob"), _cand(1, 0.66, who="Ann")]
    params = ContextParams(neighbour_weight=0, chat_weight=0, who_weight=0.08)
    assert [c.id for c in apply_context(items, "What does Ann like?", params)] == [1, 0]
    items = [_cand(0, 0.70, who="Bob"), _cand(1, 0.66, who="Ann")]
    assert [c.id for c in apply_context(items, "What does she like?", params)] == [0, 1]


def test_semantic_memories_and_chatless_rows_get_no_context():
    items = [_cand(0, 0.7, kind="semantic"), _cand(1, 0.7, chat=""), _cand(2, 0.7)]
    params = ContextParams(neighbour_weight=0.3, chat_weight=0.3, who_weight=0)
    out = apply_context(items, "q", params, {0: [2], 1: [2], 2: []})
    assert out[0].id == 2
    assert {c.id: c.score for c in out}[0] == pytest.approx(0.7)
    assert {c.id: c.score for c in out}[1] == pytest.approx(0.7)


@given(
    scores=st.lists(st.floats(min_value=-1, max_value=1), min_size=1, max_size=12),
    weights=st.tuples(*(st.floats(min_value=0, max_value=2) for _ in range(3))),
)
def test_context_never_lowers_a_nonnegative_score_and_keeps_every_candidate(scores, weights):
    items = [_cand(i, s, chat=f"c{i % 3}", ts=i) for i, s in enumerate(scores)]
    before = {c.id: c.score for c in items}
    near = {c.id: [j for j in (c.id - 1, c.id + 1) if 0 <= j < len(items)] for c in items}
    params = ContextParams(*weights)
    out = apply_context(items, "q", params, near, {})
    assert sorted(c.id for c in out) == sorted(before)
    if params.active:
        assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    else:  # the identity: the incoming order and scores
        assert [(c.id, c.score) for c in out] == list(before.items())
    for c in out:
        if all(s >= 0 for s in scores):
            assert c.score >= before[c.id] - 1e-12


# --------------------------------------------------------------- against milvus-lite

TRIP = [
    ("Ann", "I finally booked the flights for our Paris trip in May."),
    ("Bob", "Nice! Are you going to Paris alone?"),
    ("Ann", "No, with my sister Clara."),
]
WORK = [
    ("Ann", "The quarterly report is due on Friday."),
    ("Bob", "Do you need help with the slides?"),
    ("Ann", "No, with my colleague Tom."),
]


def _load(memory, user: str, chats: dict[str, list[tuple[str, str]]], t0: int = 1_700_000_000) -> dict[str, int]:
    items = []
    for c, (chat, turns) in enumerate(chats.items()):
        for i, (who, text) in enumerate(turns):
            items.append({"text": f"{who}: {text}", "user_id": user, "chat_id": chat, "who": who, "ts": t0 + 10_000 * c + 30 * i})
    ids = memory.add_many(items)
    return {it["text"]: i for it, i in zip(items, ids)}


def _with_context(memory, params: ContextParams) -> None:
    memory.retriever.params = dataclasses.replace(memory.retriever.params, context=params)


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_the_answer_is_found_through_the_question_it_answers(memory, mode):
    ids = _load(memory, "u1", {"trip": TRIP, "work": WORK})
    answer, decoy = ids["Ann: No, with my sister Clara."], ids["Ann: No, with my colleague Tom."]
    _with_context(memory, FULL)
    hits = memory.search("Who is Ann travelling to Paris with?", user_id="u1", limit=6, mode=mode).episodic
    order = [h.id for h in hits]
    assert order.index(answer) < order.index(decoy)
    top = {h.id: h for h in hits}[answer]
    assert top.score > (top.similarity or 0) + 0.3 * 0.5  # the neighbour's bonus is in the score


FULL = ContextParams(neighbour_weight=0.3, chat_weight=0.5, who_weight=0.08)


def test_neighbours_never_come_from_another_user(memory):
    _with_context(memory, FULL)
    _load(memory, "alice", {"trip": TRIP, "work": WORK})
    query = "Who is Ann travelling to Paris with?"
    before = [(h.id, round(h.score, 6)) for h in memory.search(query, user_id="alice", limit=6).episodic]
    # bob writes highly relevant turns into chats of the same names, interleaved in time
    _load(memory, "bob", {"trip": [("Ann", "Ann is travelling to Paris with her sister Clara.")] * 3,
                          "work": [("Ann", "Ann is travelling to Paris with her sister Clara.")] * 3}, t0=1_700_000_015)
    after = [(h.id, round(h.score, 6)) for h in memory.search(query, user_id="alice", limit=6).episodic]
    assert after == before


def test_hostile_chat_ids_stay_literal_in_the_neighbour_query(memory):
    hostile = 'x" or user_id != "'
    _with_context(memory, FULL)
    _load(memory, "u1", {hostile: TRIP})
    _load(memory, "u2", {"x": WORK})
    hits = memory.search("Who is Ann travelling to Paris with?", user_id="u1", limit=10).episodic
    assert {h.memory.chat_id for h in hits} == {hostile}
    assert len(hits) == 3


def test_bm25_only_search_skips_the_context_stage(memory):
    _load(memory, "u1", {"trip": TRIP, "work": WORK})
    hits = memory.search("Paris", user_id="u1", limit=3, mode="bm25").episodic
    assert hits and all(h.similarity is None for h in hits)
    assert hits[0].text.startswith(("Ann: I finally", "Bob: Nice"))


def test_the_default_context_stage_makes_no_extra_store_call(memory):
    """Chat and who bonuses come from the candidates alone; only the opt-in neighbour bonus queries."""
    _load(memory, "u1", {"trip": TRIP, "work": WORK})
    calls = []
    real_query = memory.store.query
    memory.store.query = lambda *a, **k: calls.append(a) or real_query(*a, **k)
    try:
        assert memory.config.rank_neighbour_weight == 0 and memory.config.rank_chat_weight > 0
        memory.search("Who is Ann travelling to Paris with?", user_id="u1", limit=3, mode="dense")
        assert calls == []
        _with_context(memory, FULL)
        memory.search("Who is Ann travelling to Paris with?", user_id="u1", limit=3, mode="dense")
        # the windows around the candidates (here every memory is a candidate: no vectors to fetch)
        assert len(calls) == 1 and "chat_id" in calls[0][0] and "user_id" in calls[0][0]
    finally:
        memory.store.query = real_query


def test_search_result_all_keeps_each_kind_in_order_and_meets_them_by_cosine():
    from hippocampus.models import MemoryRecord, SearchHit, SearchResult

    def hit(i: int, kind: str, score: float, sim: float | None) -> SearchHit:
        record = MemoryRecord(id=i, user_id="u", memory_type=kind, ts=0, chat_id="c", who="u", text=f"m{i}")
        return SearchHit(memory=record, score=score, similarity=sim)

    # episodic scores carry a chat bonus (1.3 > 0.9) that must not bury a closer semantic fact
    episodic = [hit(1, "episodic", 1.30, 0.80), hit(2, "episodic", 1.25, 0.85), hit(3, "episodic", 0.60, 0.50)]
    semantic = [hit(4, "semantic", 0.90, 0.90), hit(5, "semantic", 0.70, 0.70)]
    assert [h.id for h in SearchResult(episodic=episodic, semantic=semantic).all] == [4, 1, 2, 5, 3]
    assert [h.id for h in SearchResult(episodic=episodic).all] == [1, 2, 3]
    # BM25-only search has no cosine: scores decide
    bm = SearchResult(episodic=[hit(1, "episodic", 5.0, None)], semantic=[hit(2, "semantic", 7.0, None)])
    assert [h.id for h in bm.all] == [2, 1]


@pytest.mark.parametrize("field", ["rank_neighbour_weight", "rank_chat_weight", "rank_who_weight", "rank_neighbour_window_seconds"])
def test_negative_context_settings_are_refused(field):
    from pydantic import ValidationError

    from hippocampus.config import MemoryConfig

    with pytest.raises(ValidationError, match=field):
        MemoryConfig(**{field: -1})


def test_a_superseded_turn_lends_no_neighbour_bonus(shared_db, embedder):
    """On milvus-lite the neighbour query skips the JSON superseded filter and drops those rows itself:
    a superseded turn neither comes back nor votes for the turn beside it."""
    import uuid

    from hippocampus import Memory

    t0 = 1_767_225_600
    with Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder,
                rank_neighbour_weight=0.3) as m:
        asked = m.add("Where should we go for dinner tonight?", user_id="u", chat_id="c", infer=False, ts=t0).ids[0]
        answer = m.add("The Thai place on Main Street, they do great curry", user_id="u", chat_id="c", infer=False, ts=t0 + 30).ids[0]

        def bonus() -> dict[int, float]:
            return {h.id: h.signals["neighbour"] for h in m.search("dinner plans tonight", user_id="u").episodic}

        assert bonus()[answer] > 0
        (row,) = m.store.query(f"id == {asked}", fields=["*"], limit=1)
        row = {k: v for k, v in row.items() if k != "sparse"}  # BM25's output field is the collection's to fill
        row["metadata"] = {**row["metadata"], "life": {**row["metadata"].get("life", {}), "superseded_by": answer}}
        m.store.upsert([row])
        assert bonus() == {answer: 0.0}
