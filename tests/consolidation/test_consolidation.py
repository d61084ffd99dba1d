"""Consolidation job behaviour against real milvus-lite: failures are safe, history is kept,
recovery finishes interrupted merges, pending decisions are retried, work grows with n x k."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from hippocampus import Memory
from hippocampus.llm.rules import RulesProvider
from hippocampus.models import HistoryAction
from hippocampus.processors.merger import EpisodicMerger
from hippocampus.processors.separator import EpisodicSeparator
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import episode_row, merge_union, scripted_chat, separate_tagged, vector_pair

T0 = 1_767_225_600
BAD_REPLIES = {
    "invalid JSON": lambda _i: "same event, I think",
    "schema-invalid JSON": lambda _i: '{"same_event": "perhaps", "text": 3}',
    "LLM error": lambda _i: TimeoutError("the endpoint timed out after 3 attempts"),
}


@pytest.fixture(scope="module")
def _module_memory(shared_db):
    """One store collection for the module (creating one costs ~1.5 s); each test uses its own users."""
    m = Memory(milvus_uri=str(shared_db), collection_name=f"c_{uuid.uuid4().hex[:12]}", embedder=DeterministicEmbedder(8, lexical=False), llm=scripted_chat(),
               t_merge_high=0.85, t_amb_low=0.65)
    yield m
    m.close()


@pytest.fixture
def mem(_module_memory):
    with _module_memory.override(llm=scripted_chat()):  # fresh script and call log per test
        yield _module_memory


def _pair(mem: Memory, sim: float = 0.95, gap: int = 60, texts=("first telling", "second telling")):
    user = f"u-{uuid.uuid4().hex[:8]}"
    va, vb = vector_pair(sim, seed=7)
    ids = mem.store.insert([episode_row(user, texts[0], va, T0), episode_row(user, texts[1], vb, T0 + gap)])
    return user, ids


# ------------------------------------------------------------------ processors
def test_merger_and_separator_return_validated_results(mem):
    user, ids = _pair(mem)
    a, b = (mem.get(i, user) for i in ids)
    llm = scripted_chat({"MergeResult": merge_union})
    result = EpisodicMerger(llm).merge(a, b)
    assert result.same_event and result.text == "first telling / second telling"
    sep = EpisodicSeparator(llm).separate(a, b)
    assert (sep.text_a, sep.text_b) == ("first telling (A)", "second telling (B)")
    prompt = llm.prompts[0]
    assert "<data>" in prompt.user and "first telling" in prompt.user and prompt.inputs["memory_a"]["id"] == ids[0]


def test_merger_same_event_without_text_is_not_a_merge(mem):
    user, ids = _pair(mem)
    llm = scripted_chat({"MergeResult": lambda _i: '{"same_event": true, "text": "  ", "context": "", "thing": "", "reason": "x"}'})
    result = EpisodicMerger(llm).merge(*(mem.get(i, user) for i in ids))
    assert result.same_event is False


@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_failed_merge_deletes_nothing_and_counts_an_error(mem, kind, caplog):
    mem.llm.replies["MergeResult"] = BAD_REPLIES[kind]
    user, ids = _pair(mem)
    before = {r.id: r.text for r in mem.get_all(user)}
    with caplog.at_level(logging.WARNING):
        stats = mem.consolidate(user_id=user)
    assert stats.errors == 1 and stats.merged == 0 and stats.separated == 0
    assert {r.id: r.text for r in mem.get_all(user)} == before
    assert any("merge of" in r.getMessage() and "skipped" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_failed_separation_keeps_both_texts(mem, kind, caplog):
    mem.llm.replies["SeparationResult"] = BAD_REPLIES[kind]
    user, ids = _pair(mem, sim=0.75)
    with caplog.at_level(logging.WARNING):
        stats = mem.consolidate(user_id=user)
    assert stats.errors == 1 and stats.separated == 0
    assert [r.text for r in mem.get_all(user)] == ["first telling", "second telling"]
    assert any("separation of" in r.getMessage() for r in caplog.records)


def test_same_event_false_never_merges_and_goes_to_the_separator(mem):
    user, ids = _pair(mem, sim=0.99)  # as similar as duplicates: two dentist visits with e5
    stats = mem.consolidate(user_id=user)
    assert stats.merged == 0 and stats.separated_pairs == 1 and stats.separated == 2  # one pair, both rewritten
    assert mem.llm.count("MergeResult") == 1 and mem.llm.count("SeparationResult") == 1
    records = {r.id: r for r in mem.get_all(user)}
    assert set(records) == set(ids)
    assert records[ids[0]].metadata["separated_from"] == [ids[1]]
    events = mem.history(ids[0], user)
    assert events[-1].action is HistoryAction.SEPARATED and events[-1].actor == "consolidation"
    assert (events[-1].old_text, events[-1].new_text) == ("first telling", "first telling (A)")
    again = mem.consolidate(user_id=user)  # already told apart: no new calls, no new rewrite
    assert again.llm_calls == 0 and again.separated == 0


# ------------------------------------------------------------------ merge, history, recovery
def test_merge_history_and_count(mem):
    mem.llm.replies["MergeResult"] = merge_union
    user, ids = _pair(mem)
    stats = mem.consolidate(user_id=user)
    (merged,) = mem.get_all(user)
    assert stats.merged == 1 and merged.id not in ids
    created = mem.history(merged.id, user)
    assert created[0].action is HistoryAction.MERGED and created[0].details["merged_from_ids"] == ids
    for source in ids:
        last = mem.history(source, user)[-1]
        assert last.action is HistoryAction.MERGED and last.details["merged_into"] == merged.id
        assert last.old_text in ("first telling", "second telling") and last.new_text == merged.text


def test_interrupted_merge_is_finished_by_the_next_run(mem):
    """A merged record written (merge_pending) while its sources still exist: the next run deletes them once."""
    user, ids = _pair(mem, sim=0.1)
    vec = DeterministicEmbedder(8, lexical=False).encode(["first telling / second telling"])[0].tolist()
    row = episode_row(user, "first telling / second telling", vec, T0, merged_from_ids=ids, source_chat_ids=["c1"], merge_pending=True)
    (merged_id,) = mem.store.insert([row])
    stats = mem.consolidate(user_id=user)
    remaining = mem.get_all(user)
    assert [r.id for r in remaining] == [merged_id] and "merge_pending" not in remaining[0].metadata
    assert stats.merged == 0
    assert mem.history(ids[0], user)[-1].details["merged_into"] == merged_id


def test_merge_is_scoped_to_the_user(mem):
    mem.llm.replies["MergeResult"] = merge_union
    alice, _ = _pair(mem)
    bob, bob_ids = _pair(mem)
    mem.consolidate(user_id=alice)
    assert len(mem.get_all(alice)) == 1
    assert [r.id for r in mem.get_all(bob)] == bob_ids
    mem.consolidate()  # all users: bob's pair now
    assert len(mem.get_all(bob)) == 1


# ------------------------------------------------------------------ pending decisions
def _pending(mem: Memory, user: str, text: str) -> int:
    vec = DeterministicEmbedder(8, lexical=False).encode([text])[0].tolist()
    return mem.store.insert([episode_row(user, text, vec, T0, pending_decision=True)])[0]


def test_pending_decisions_are_retried(mem):
    user = f"u-{uuid.uuid4().hex[:8]}"
    keep = _pending(mem, user, "remember: my passport number ends in 42")
    drop = _pending(mem, user, "hello there")
    stuck = _pending(mem, user, "the LLM is still down for this one")

    def decide(inputs):
        text = json.dumps(inputs, ensure_ascii=False)
        if "still down" in text:
            return ConnectionError("endpoint unreachable")
        keep_it = "passport" in text
        return json.dumps({"write_episodic": keep_it, "context": "travel" if keep_it else "", "thing": "passport number" if keep_it else "",
                           "time": "", "who": ""})

    mem.llm.replies["WriteDecision"] = decide
    stats = mem.consolidate(user_id=user)
    assert stats.pending_decided == 2 and stats.errors == 1
    kept = mem.get(keep, user)
    assert "pending_decision" not in kept.metadata and kept.metadata["context"] == "travel"
    assert kept.text == "passport number"  # stored as the online path stores a decision: its `thing`, the turn beside it
    assert kept.metadata["source_text"] == "remember: my passport number ends in 42"
    (decided,) = [e for e in mem.history(keep, user) if e.action is HistoryAction.UPDATED]
    assert (decided.old_text, decided.new_text, decided.actor) == ("remember: my passport number ends in 42", "passport number", "consolidation")
    assert drop not in {r.id for r in mem.get_all(user)}
    assert mem.history(drop, user)[-1].action is HistoryAction.DELETED
    assert mem.get(stuck, user).metadata["pending_decision"] is True


# ------------------------------------------------------------------ scale and progress
def test_similarity_lookups_grow_with_n_not_n_squared(mem):
    user = f"u-{uuid.uuid4().hex[:8]}"
    texts = [f"episode number {i}" for i in range(40)]
    vecs = DeterministicEmbedder(8, lexical=False).encode(texts)
    mem.store.insert([episode_row(user, t, v.tolist(), T0 + 86400 * 30 * i) for i, (t, v) in enumerate(zip(texts, vecs))])
    mem.llm.replies["SeparationResult"] = lambda i: json.dumps(  # texts unchanged: vectors stay, so a re-run has nothing new
        {"text_a": i["memory_a"]["text"], "text_b": i["memory_b"]["text"], "context_a": "", "context_b": "", "reason": "kept"})
    seen: list[tuple[str, int, int]] = []
    stats = mem.consolidate(user_id=user, progress=lambda phase, done, total: seen.append((phase, done, total)))
    assert stats.examined == 40
    # one neighbour search per episode for pairs, one per episode for distillation (no facts scripted)
    assert stats.similarity_lookups == 80
    assert ("pairs", 40, 40) in seen and ("semantic", 40, 40) in seen
    assert 0 < stats.candidate_pairs < 40 * 39 // 2  # the pairs the search proposed, not every pair
    again = mem.consolidate(user_id=user)
    assert again.llm_calls == 0 and again.similarity_lookups == 40
    assert again.candidate_pairs == stats.candidate_pairs  # proposed again, judged distinct before: not asked


def test_separations_are_written_in_batches_not_per_pair(mem, monkeypatch):
    """The pair pass's store writes do not grow with the pairs told apart (consolidation/pairs.py): before,
    each pair read its vectors, checked its rows, upserted them and wrote its events (about 5 calls a pair)."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    rows = []
    for i in range(12):  # twelve look-alike pairs (cosine 0.75: the Separator's band), a month apart
        va, vb = vector_pair(0.75, seed=100 + i)
        rows += [episode_row(user, f"trip {i} to the lake", va, T0 + 86400 * 30 * i),
                 episode_row(user, f"trip {i} to the sea", vb, T0 + 86400 * 30 * i + 60)]
    ids = mem.store.insert(rows)
    calls: dict[str, int] = {}
    for name in ("upsert", "add_history", "vectors"):
        def counted(*a, _f=getattr(mem.store, name), _name=name, **kw):
            calls[_name] = calls.get(_name, 0) + 1
            return _f(*a, **kw)
        monkeypatch.setattr(mem.store, name, counted)
    stats = mem.consolidate(user_id=user)
    assert stats.separated_pairs >= 12 and stats.separated == 24
    # a few for the distillation's marks, the pass's separations (one batch) and the lifecycle: none per pair
    assert calls.get("upsert", 0) <= 4 and calls.get("add_history", 0) <= 4 and calls.get("vectors", 0) == 0
    texts = {r.id: r.text for r in mem.get_all(user, "episodic")}
    assert all(texts[i].endswith(("(A)", "(B)")) for i in ids)  # every pair's rewrite was written
    assert all(HistoryAction.SEPARATED in [e.action for e in mem.history(i, user)] for i in ids)


def test_offline_rules_on_real_embeddings(memory):
    """e5 + the rules provider: a duplicate merges; two sisters in two cities stay apart."""
    memory.llm = RulesProvider()
    user = f"u-{uuid.uuid4().hex[:8]}"
    memory.add("I went to the dentist this afternoon and got a filling", user_id=user, chat_id="c1", ts=T0)
    memory.add("I went to the dentist this afternoon and got a filling. It cost $120.", user_id=user, chat_id="c1", ts=T0 + 600)
    memory.add("我姐姐住在上海", user_id=user, chat_id="c2", ts=T0)
    memory.add("我姐姐住在北京", user_id=user, chat_id="c3", ts=T0 + 86400)
    stats = memory.consolidate(user_id=user)
    texts = sorted(r.text for r in memory.get_all(user, "episodic"))
    assert stats.merged == 1 and stats.errors == 0
    assert "I went to the dentist this afternoon and got a filling. It cost $120." in texts
    assert any(t.startswith("我姐姐住在上海") for t in texts) and any(t.startswith("我姐姐住在北京") for t in texts)
    assert len(texts) == 3


@pytest.mark.parametrize("step", ["MergeResult", "SeparationResult"])
def test_a_delete_racing_the_run_is_never_undone(mem, step):
    """The user deletes a memory while the model is judging it: it stays deleted, its text is not merged anywhere."""
    user, ids = _pair(mem, sim=0.95 if step == "MergeResult" else 0.75)
    answer = merge_union if step == "MergeResult" else separate_tagged

    def racing(inputs):
        mem.delete(ids[1], user_id=user)
        return answer(inputs)

    mem.llm.replies[step] = racing
    mem.consolidate(user_id=user)
    remaining = mem.get_all(user)
    assert [r.id for r in remaining] == [ids[0]]
    assert all("second telling" not in r.text for r in remaining)


def test_a_separation_that_changes_nothing_is_not_counted_but_not_repeated(mem):
    user, ids = _pair(mem, sim=0.75)
    mem.llm.replies["SeparationResult"] = lambda i: json.dumps(
        {"text_a": i["memory_a"]["text"], "text_b": i["memory_b"]["text"], "context_a": "", "context_b": "", "reason": "unrelated"})
    stats = mem.consolidate(user_id=user)
    assert stats.separated == 0 and mem.llm.count("SeparationResult") == 1
    assert [e.action for e in mem.history(ids[0], user)] == [HistoryAction.DISTILLED]  # no SEPARATED event: nothing changed
    assert mem.get(ids[0], user).metadata["separated_from"] == [ids[1]]
    assert mem.consolidate(user_id=user).llm_calls == 0
