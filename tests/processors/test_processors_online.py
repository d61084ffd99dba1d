"""The online processors (WriteDecider, Reconsolidator, SemanticWriter) and the online flow:
add(infer=True) and mark_used, against real milvus-lite; only the LLM is scripted."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest

from hippocampus import LLMError, Memory, NotFound
from hippocampus.config import MemoryConfig
from hippocampus.llm import LLMClient
from hippocampus.llm.factory import make_llm
from hippocampus.llm.rules import RulesProvider
from hippocampus.models import HistoryAction, MemoryRecord, ts_to_iso
from hippocampus.processors import (
    EpisodicReconsolidator,
    EpisodicWriteDecider,
    ReconsolidationResult,
    SemanticWriter,
    WriteDecision,
    apply_reconsolidation,
    load_prompt,
)
from hippocampus.testing import ScriptedChatModel

T0 = 1_767_258_000  # 2026-01-01T09:00:00Z
DATA = Path(__file__).resolve().parents[1] / "data"
TURN = [{"role": "user", "content": "请记住，我对花生过敏"}]
YES = json.dumps({"write_episodic": True, "context": "健康", "thing": "我对花生过敏", "time": "", "who": "user", "reason": "allergy"})
NO = json.dumps({"write_episodic": False, "reason": "small talk"})
CHANGED = json.dumps({"changed": True, "text": "Interview moved to Friday, second round", "context": "job hunt", "thing": "", "update_desc": "moved to Friday"})


def record(text: str = "I have an interview next Wednesday", **meta) -> MemoryRecord:
    base = {"context": "job hunt", "thing": text, "time": ts_to_iso(T0), "chatid": "c1", "who": "u"}
    return MemoryRecord(id=7, user_id="u", memory_type="episodic", ts=T0, chat_id="c1", who="u", text=text, metadata={**base, **meta})


@pytest.fixture
def scripted() -> ScriptedChatModel:
    return ScriptedChatModel()


@pytest.fixture
def mem(shared_db, embedder, scripted):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder, llm=scripted)
    yield m
    m.close()


def uid() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------ the scripted double itself
def test_scripted_llm_parses_like_the_client():
    llm = ScriptedChatModel(["Sure! ```json\n" + YES + "\n```"])
    decision = EpisodicWriteDecider(llm).decide("c1", TURN)
    assert decision.write_episodic and decision.thing == "我对花生过敏" and llm.calls == 1 and llm.tries == 1


def test_scripted_llm_retries_an_unusable_reply_then_succeeds():
    llm = ScriptedChatModel(["I think yes", YES])
    assert EpisodicWriteDecider(llm).decide("c1", TURN).write_episodic
    assert llm.calls == 1 and llm.tries == 2


# ------------------------------------------------------------------ WriteDecider
def test_write_decider_valid_output_and_prompt_shape():
    llm = ScriptedChatModel([YES])
    decision = EpisodicWriteDecider(llm).decide("chat-9", TURN, now_iso=ts_to_iso(T0))
    assert decision == WriteDecision(write_episodic=True, context="健康", thing="我对花生过敏", time="", who="user", reason="allergy")
    prompt = llm.prompts[0]
    assert "<data>" in prompt.user and "我对花生过敏" in prompt.user and "chat-9" in prompt.user
    assert "Example 1" in prompt.system and "记住" in prompt.system and "capital of Australia" in prompt.system


def test_write_decider_yes_without_thing_keeps_the_users_words():
    llm = ScriptedChatModel(['{"write_episodic": true}'])
    turns = [{"role": "user", "content": "I moved to Lyon"}, {"role": "assistant", "content": "Nice!"}]
    assert EpisodicWriteDecider(llm).decide("c", turns).thing == "I moved to Lyon"


def test_write_decider_bad_time_becomes_empty():
    llm = ScriptedChatModel(['{"write_episodic": true, "thing": "x y z", "time": "yesterday"}'])
    assert EpisodicWriteDecider(llm).decide("c", TURN).time == ""


@pytest.mark.parametrize(
    "replies",
    [
        ["not json at all"] * 3,  # invalid JSON
        ['{"write_episodic": "perhaps"}'] * 3,  # schema-invalid
        ['{"context": "no decision"}'] * 3,  # required field missing
        [LLMError("scripted", 3, "HTTP 500")],  # the client gave up
    ],
    ids=["invalid-json", "schema-invalid", "missing-field", "llm-error"],
)
def test_write_decider_failures_raise_llm_error_and_log(replies, caplog):
    llm = ScriptedChatModel(replies)
    with caplog.at_level(logging.WARNING), pytest.raises(LLMError):
        EpisodicWriteDecider(llm).decide("c1", TURN)
    assert "write_decider" in caplog.text


# ------------------------------------------------------------------ Reconsolidator
def test_reconsolidator_valid_output_and_apply_preserves_identity():
    old = record(updates=[{"time": "2025-12-01T00:00:00+00:00", "desc": "first"}])
    llm = ScriptedChatModel([CHANGED])
    result = EpisodicReconsolidator(llm).reconsolidate(old, "user: it moved to Friday", now_iso="2026-01-02T00:00:00+00:00")
    assert result.changed and result.text.startswith("Interview moved")
    assert "<data>" in llm.prompts[0].user and "moved to Friday" in llm.prompts[0].user
    text, meta = apply_reconsolidation(old, result, "2026-01-02T00:00:00+00:00", "user: it moved to Friday")
    assert text == "Interview moved to Friday, second round" and meta["context"] == "job hunt"
    assert [meta[k] for k in ("time", "chatid", "who")] == [old.metadata[k] for k in ("time", "chatid", "who")]
    assert meta["updates"][-1] == {"time": "2026-01-02T00:00:00+00:00", "desc": "moved to Friday"} and len(meta["updates"]) == 2


def test_reconsolidator_changed_without_anything_new_counts_as_unchanged():
    old = record()
    llm = ScriptedChatModel([json.dumps({"changed": True, "text": old.text})])
    assert not EpisodicReconsolidator(llm).reconsolidate(old, "user: yes, that interview").changed


@pytest.mark.parametrize(
    "replies",
    [["{oops"] * 3, ['{"changed": "sometimes"}'] * 3, [TimeoutError("read timed out")] * 3],
    ids=["invalid-json", "schema-invalid", "transport"],
)
def test_reconsolidator_failures_raise_llm_error_and_log(replies, caplog):
    with caplog.at_level(logging.WARNING), pytest.raises(LLMError):
        EpisodicReconsolidator(ScriptedChatModel(replies)).reconsolidate(record(), "user: moved to Friday")
    assert "reconsolidator" in caplog.text


# ------------------------------------------------------------------ SemanticWriter
def test_semantic_writer_valid_output_is_deduplicated_against_existing_facts():
    reply = {"facts": [{"fact": "The user is allergic to peanuts."}, {"fact": "  The user has a daughter, Emma  "},
                       {"fact": "the user has a daughter emma"}, {"fact": "   "}]}
    llm = ScriptedChatModel([json.dumps(reply)])
    out = SemanticWriter(llm).extract(record("remember I'm allergic to peanuts and my daughter is Emma"), ["The user is allergic to peanuts"])
    assert [f.fact for f in out.facts] == ["The user has a daughter, Emma"]
    assert "allergic to peanuts" in llm.prompts[0].user  # the existing facts were shown


@pytest.mark.parametrize("replies", [["[1, 2"] * 3, ['{"facts": "many"}'] * 3, [LLMError("scripted", 3, "429")]])
def test_semantic_writer_failures_raise_llm_error_and_log(replies, caplog):
    with caplog.at_level(logging.WARNING), pytest.raises(LLMError):
        SemanticWriter(ScriptedChatModel(replies)).extract(record(), [])
    assert "semantic_writer" in caplog.text


# ------------------------------------------------------------------ add(infer=True)
def test_add_infer_no_stores_nothing_with_one_call(mem, scripted):
    user = uid()
    scripted.queue(NO)
    res = mem.add("hi there!", user_id=user, infer=True)
    assert not res.stored and res.ids == [] and res.reason == "small talk"
    assert mem.get_all(user) == [] and scripted.calls == 1


def test_add_infer_yes_writes_episodic_metadata(mem, scripted):
    user = uid()
    scripted.queue(json.dumps({"write_episodic": True, "context": "health", "thing": "allergic to peanuts",
                               "time": ts_to_iso(T0 - 86400), "who": "Alice", "reason": "allergy"}))
    res = mem.add("remember: I'm allergic to peanuts", user_id=user, chat_id="c-42", who="alice", ts=T0, infer=True)
    assert res.stored and len(res.ids) == 1 and scripted.calls == 1
    rec = mem.get(res.ids[0], user)
    assert rec.memory_type.value == "episodic" and rec.text == "allergic to peanuts" and rec.hit_count == 0
    assert rec.chat_id == "c-42" and rec.who == "alice" and rec.ts == T0 - 86400
    meta = rec.metadata
    assert (meta["context"], meta["thing"], meta["time"], meta["chatid"], meta["who"]) == (
        "health", "allergic to peanuts", ts_to_iso(T0 - 86400), "c-42", "alice")
    assert meta["source_text"] == "remember: I'm allergic to peanuts" and meta["subject"] == "Alice"
    assert [h.action for h in mem.history(rec.id, user)] == [HistoryAction.CREATED]


def test_add_infer_far_away_model_time_is_not_trusted(mem, scripted):
    user = uid()
    scripted.queue(json.dumps({"write_episodic": True, "thing": "I was born in Oslo", "time": "1990-05-01T00:00:00+00:00"}))
    rec = mem.get(mem.add("I was born in Oslo", user_id=user, ts=T0, infer=True).ids[0], user)
    assert rec.ts == T0 and rec.metadata["time"] == ts_to_iso(T0) and rec.metadata["event_time"].startswith("1990")


@pytest.mark.parametrize("failure", [["garbage"] * 3, ['{"write_episodic": 3}'] * 3, [LLMError("scripted", 3, "HTTP 503")]],
                         ids=["invalid-json", "schema-invalid", "llm-error"])
def test_add_infer_llm_failure_keeps_the_turn_pending(mem, scripted, failure, caplog):
    user = uid()
    scripted.queue(*failure)
    turns = [{"role": "user", "content": "我下周三去上海出差"}, {"role": "assistant", "content": "一路顺风"}]
    with caplog.at_level(logging.WARNING):
        res = mem.add(turns, user_id=user, chat_id="c1", ts=T0, infer=True)
    assert res.stored and res.pending_decision and len(res.ids) == 1
    rec = mem.get(res.ids[0], user)
    assert rec.metadata["pending_decision"] is True and rec.metadata["turns"] == turns
    assert "我下周三去上海出差" in rec.text and rec.metadata["time"] == ts_to_iso(T0)
    assert "keeping the turn raw" in caplog.text and scripted.calls == 1


def test_add_infer_bad_input_is_refused_before_any_llm_call(mem, scripted):
    from hippocampus import InvalidInput

    with pytest.raises(InvalidInput):
        mem.add("   ", user_id=uid(), infer=True)
    assert scripted.calls == 0


# ------------------------------------------------------------------ mark_used
def _stored(mem: Memory, user: str, text: str, **kw) -> int:
    return mem.add(text, user_id=user, chat_id=kw.pop("chat_id", "c1"), ts=kw.pop("ts", T0), infer=False, **kw).ids[0]


def test_mark_used_increments_hit_count_once_and_records_history(mem, scripted):
    user = uid()
    a, b, c = (_stored(mem, user, t) for t in ("I live in Lyon", "I like tea", "I have a dog"))
    out = mem.mark_used([a, b, a], user_id=user)  # a reported twice in one answer: one use
    assert sorted(r.id for r in out) == [a, b] and scripted.calls == 0
    assert [mem.get(i, user).hit_count for i in (a, b, c)] == [1, 1, 0]
    mem.mark_used(a, user_id=user)
    assert mem.get(a, user).hit_count == 2
    assert [h.action for h in mem.history(a, user)] == [HistoryAction.CREATED, HistoryAction.HIT, HistoryAction.HIT]


def test_mark_used_unknown_or_foreign_id_changes_nothing(mem):
    user, other = uid(), uid()
    mine, theirs = _stored(mem, user, "I live in Lyon"), _stored(mem, other, "I live in Oslo")
    for ids in ([mine, theirs], [mine, 987654321]):
        with pytest.raises(NotFound):
            mem.mark_used(ids, user_id=user, context="user: hello")
    assert mem.get(mine, user).hit_count == 0 and mem.get(theirs, other).hit_count == 0
    assert [h.action for h in mem.history(mine, user)] == [HistoryAction.CREATED]


def test_mark_used_with_context_reconsolidates_episodic_only(mem, scripted, embedder):
    user = uid()
    epi = _stored(mem, user, "I have an interview next Wednesday", chat_id="c7", who="bob")
    sem = mem.add("The user likes tea", user_id=user, memory_type="semantic", infer=False).ids[0]
    before = mem.get(epi, user)
    scripted.queue(CHANGED)
    mem.mark_used([epi, sem], user_id=user, context="user: the interview moved to Friday, second round")
    assert scripted.calls == 1  # the semantic memory is not reconsolidated
    after = mem.get(epi, user)
    assert after.text == "Interview moved to Friday, second round" and after.hit_count == 1
    assert (after.chat_id, after.who, after.ts) == (before.chat_id, before.who, before.ts)
    assert all(after.metadata[k] == before.metadata[k] for k in ("time", "chatid", "who"))
    assert len(after.metadata["updates"]) == 1 and after.metadata["updates"][0]["desc"] == "moved to Friday"
    hist = mem.history(epi, user)
    assert [h.action for h in hist][-2:] == [HistoryAction.HIT, HistoryAction.RECONSOLIDATED]
    assert hist[-1].old_text == before.text and hist[-1].new_text == after.text
    assert mem.search("interview on Friday", user_id=user, memory_type="episodic").episodic[0].id == epi  # re-embedded
    assert mem.get(sem, user).hit_count == 1


@pytest.mark.parametrize("failure", [["nope"] * 3, [LLMError("scripted", 3, "HTTP 500")]], ids=["invalid-json", "llm-error"])
def test_mark_used_llm_failure_leaves_memory_unchanged_but_counts_the_hit(mem, scripted, failure, caplog):
    user = uid()
    epi = _stored(mem, user, "I have an interview next Wednesday")
    before = mem.get(epi, user)
    scripted.queue(*failure)
    with caplog.at_level(logging.WARNING):
        mem.mark_used([epi], user_id=user, context="user: it moved to Friday")
    after = mem.get(epi, user)
    assert after.text == before.text and "updates" not in after.metadata and after.hit_count == 1
    assert "reconsolidation of memory" in caplog.text


def test_mark_used_unchanged_verdict_only_counts_the_hit(mem, scripted):
    user = uid()
    epi = _stored(mem, user, "I adopted a cat named Miso")
    scripted.queue('{"changed": false}')
    mem.mark_used([epi], user_id=user, context="user: what's the weather tomorrow?")
    after = mem.get(epi, user)
    assert after.text == "I adopted a cat named Miso" and "updates" not in after.metadata and after.hit_count == 1


# ------------------------------------------------------------------ the offline rules provider end to end
def test_offline_memory_remembers_personal_turns_and_skips_chitchat(memory):
    user = uid()
    assert isinstance(memory.llm, RulesProvider)
    for text in ("你好", "thanks!", "What is the capital of France?", "怎么做红烧肉？", "ok"):
        assert not memory.add(text, user_id=user, infer=True).stored, text
    kept = [memory.add(t, user_id=user, infer=True, ts=T0) for t in ("请记住我是北京大学的学生", "My name is Tom and I live in Paris", "昨天我去医院看牙了")]
    assert all(r.stored and not r.pending_decision for r in kept)
    recs = memory.get_all(user)
    assert {r.text for r in recs} == {"我是北京大学的学生", "My name is Tom and I live in Paris", "昨天我去医院看牙了"}  # the turn kept whole
    dentist = next(r for r in recs if "牙" in r.text)
    assert dentist.ts == T0 - 86400  # "昨天" resolved by the rules
    out = memory.mark_used([dentist.id], user_id=user, context="user: 看牙的医生说下个月还要去复查")
    assert "复查" in out[0].text and len(out[0].metadata["updates"]) == 1 and out[0].metadata["time"] == dentist.metadata["time"]


def test_offline_rules_semantic_writer():
    writer = SemanticWriter(RulesProvider())
    ep = record("我叫李雷，在杭州做前端开发，周末喜欢爬山。今天好累")
    assert [f.fact for f in writer.extract(ep, ["用户周末喜欢爬山！"]).facts] == ["用户叫李雷", "用户在杭州做前端开发"]
    ep = record("My name is Tom, I live in Paris and I study physics. I went running today. What's for dinner?")
    assert [f.fact for f in writer.extract(ep, []).facts] == ["The user's name is Tom", "The user lives in Paris", "The user studies physics"]
    assert writer.extract(record("hello, how are you?"), []).facts == []


def test_offline_rules_reconsolidator_needs_the_memorys_key_words():
    rec = EpisodicReconsolidator(RulesProvider())
    old = record("I have an interview at Google next Wednesday")
    assert not rec.reconsolidate(old, "user: what's the weather like?").changed
    assert not rec.reconsolidate(old, "user: I have an interview at Google next Wednesday").changed  # nothing new
    res = rec.reconsolidate(old, "user: the Google interview moved to Friday\nassistant: good luck")
    assert res.changed and "moved to Friday" in res.text and res.text.startswith(old.text)


# ------------------------------------------------------------------ factory and prompts
def test_make_llm_offline_and_local_endpoint():
    assert isinstance(make_llm(MemoryConfig(milvus_uri="/tmp/x.db")), RulesProvider)
    client = make_llm(MemoryConfig(milvus_uri="/tmp/x.db", llm_provider="openai", llm_base_url="http://127.0.0.1:9/v1", llm_model="m"))
    assert isinstance(client, LLMClient) and client.model == "m"


@pytest.mark.parametrize("name", ["write_decider", "reconsolidator", "semantic_writer"])
def test_prompt_files_have_bilingual_examples(name):
    tpl = load_prompt(name)
    dumped = json.dumps([e.model_dump() for e in tpl.examples], ensure_ascii=False)
    assert len(tpl.examples) >= 2 and any("\u4e00" <= ch <= "\u9fff" for ch in dumped) and any(ch.isascii() and ch.isalpha() for ch in dumped)
    assert "$" in tpl.user and "JSON" in tpl.system
    model = {"write_decider": WriteDecision, "reconsolidator": ReconsolidationResult}.get(name)
    if model:
        for ex in tpl.examples:
            model.model_validate(ex.output)  # the worked answers fit the schema the model is held to


# ------------------------------------------------------------------ the labelled sets and the eval script
def test_eval_sets_and_script_run_offline(tmp_path):
    from scripts.eval_processors import SECTIONS, load_cases, main

    sizes = {name: len(load_cases(DATA, s, None)) for name, s in SECTIONS.items() if name in ("write_decider", "reconsolidator", "semantic_writer")}
    assert sizes["write_decider"] >= 60 and sizes["reconsolidator"] >= 20 and sizes["semantic_writer"] >= 20
    wd = load_cases(DATA, SECTIONS["write_decider"], None)
    assert {c["lang"] for c in wd} == {"zh", "en"} and 0.3 < sum(c["write_episodic"] for c in wd) / len(wd) < 0.7
    out = tmp_path / "eval.json"
    assert main(["--only", "write_decider", "--only", "semantic_writer", "--json", str(out)]) == 0
    rules = json.loads(out.read_text())["results"]["rules"]
    assert rules["write_decider"]["cases"] == sizes["write_decider"] and rules["write_decider"]["errors"] == 0
    assert 0.0 <= rules["semantic_writer"]["fact_recall"] <= 1.0


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("I recently moved to Porto for my new job.", True),  # an adverb between "I" and the verb
        ("The vet prescribed me nothing, but my cat is fine now.", True),  # a pet, and something done to me
        ("My wife and I are expecting twins in May.", True),  # "X and I are" is one subject
        ("护士帮我换了药，说明天再来。", True),  # done to me, without 我 as the subject
        ("刚从上海开会回来。", True),
        ("我们来聊聊电影吧", False),  # a proposal to chat is no memory
        ("I wonder why the sky is blue.", False),
    ],
)
def test_offline_write_rules_on_indirect_first_person(text: str, stored: bool):
    from hippocampus.llm.rules.writing import decide

    decision = decide([{"role": "user", "content": text}])
    assert decision["write_episodic"] is stored
    if stored:  # the whole turn is the episode, not the one clause that matched
        assert decision["thing"] == text.strip()
