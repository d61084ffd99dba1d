"""Seed 002 Properties 3, 4, 7, 8 and 9: the online flow (write decision, use, reconsolidation),
against real milvus-lite; the LLM is the offline rules provider or a ScriptedChatModel."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.llm.rules import RulesProvider
from hippocampus.models import HistoryAction, MemoryRecord, ts_to_iso
from hippocampus.processors import EpisodicWriteDecider, ReconsolidationResult, apply_reconsolidation
from hippocampus.testing import ScriptedChatModel

T0 = 1_767_258_000

# ------------------------------------------------------------------ generators (bilingual)
GREETINGS = ["你好", "您好", "嗨", "哈喽", "早上好", "晚安", "谢谢", "好的", "嗯嗯", "拜拜", "在吗", "最近怎么样", "吃了吗", "哈哈哈",
             "hi", "hello", "hey there", "good morning", "thanks", "thank you so much", "ok", "cool", "lol", "bye", "how are you",
             "what's up", "nice to meet you", "see you later", "sure", "got it"]
PUNCT = ["", "!", "！", "?", "？", "~", "～", "。", ".", "...", " 😊", "!!", " :)"]
COUNTRIES = ["France", "Japan", "Brazil", "Kenya", "Canada", "法国", "日本", "巴西", "埃及", "加拿大"]
KNOWLEDGE = [
    "What is the capital of {c}?", "How big is {c}?", "Who founded {c}?", "When did {c} become independent?",
    "Why is the sky blue?", "How do I cook rice?", "What is photosynthesis?", "Explain quantum entanglement?",
    "{c}的首都是哪里？", "{c}有多少人口？", "为什么天空是蓝色的？", "怎么做红烧肉？", "光合作用是什么？", "牛顿第二定律是什么？",
    "Python里的列表和元组有什么区别？", "How does a transformer model work?", "Which is larger, {c} or Peru?",
]
FRAGMENTS = st.sampled_from(["猫", "嗯", "the", "asdf", "and", "所以", "why", "ok?", "……", "?", "lol", "啊这", "hmm", "42"])
NAMES = ["Alice", "Bob", "Tom", "Lena", "Kenji", "李雷", "韩梅梅", "王芳", "张伟"]
CITIES = ["Paris", "Berlin", "Tokyo", "Lyon", "Oslo", "上海", "杭州", "成都", "北京"]
FOODS = ["peanuts", "shellfish", "milk", "gluten", "花生", "海鲜", "牛奶", "芒果"]
JOBS_ZH = ["老师", "医生", "程序员", "设计师", "学生"]
JOBS_EN = ["a teacher", "a nurse", "a software engineer", "a student", "an architect"]
REMEMBER_ZH = ["请记住", "记住", "帮我记一下", "别忘了", "请你记住", "不要忘了"]
REMEMBER_EN = ["remember", "please remember", "remember that", "don't forget", "note that", "please note that", "keep in mind"]
FACT_ZH = ["我叫{n}", "我住在{c}", "我对{f}过敏", "我是一名{j}", "我的生日是{m}月{d}日", "我喜欢吃{f}", "我在{c}工作", "我女儿叫{n}"]
FACT_EN = ["my name is {n}", "I live in {c}", "I'm allergic to {f}", "I am {je}", "my birthday is on {m}/{d}", "I like {f}",
           "I work in {c}", "my daughter is called {n}"]


@st.composite
def chitchat(draw) -> str:
    kind = draw(st.sampled_from(["greeting", "greetings", "knowledge", "fragment"]))
    if kind == "greeting":
        return draw(st.sampled_from(GREETINGS)) + draw(st.sampled_from(PUNCT))
    if kind == "greetings":
        parts = draw(st.lists(st.sampled_from(GREETINGS), min_size=2, max_size=3))
        sep = draw(st.sampled_from(["，", ", ", "! ", "。"]))
        return sep.join(parts) + draw(st.sampled_from(PUNCT))
    if kind == "knowledge":
        return draw(st.sampled_from(KNOWLEDGE)).format(c=draw(st.sampled_from(COUNTRIES)))
    return draw(FRAGMENTS) + draw(st.sampled_from(PUNCT))


@st.composite
def remember_request(draw) -> str:
    zh = draw(st.booleans())
    fact = draw(st.sampled_from(FACT_ZH if zh else FACT_EN)).format(
        n=draw(st.sampled_from(NAMES)), c=draw(st.sampled_from(CITIES)), f=draw(st.sampled_from(FOODS)),
        j=draw(st.sampled_from(JOBS_ZH)), je=draw(st.sampled_from(JOBS_EN)), m=draw(st.integers(1, 12)), d=draw(st.integers(1, 28)))
    phrase = draw(st.sampled_from(REMEMBER_ZH if zh else REMEMBER_EN))
    if draw(st.booleans()):
        return f"{phrase}{draw(st.sampled_from(['，', '：', '', ' ']) if zh else st.sampled_from([': ', ', ', ' ']))}{fact}{draw(st.sampled_from(PUNCT[:8]))}"
    return f"{fact}{'，' if zh else ', '}{phrase}{'哦' if zh and draw(st.booleans()) else ''}{draw(st.sampled_from(['', '!', '！', '。']))}"


ids = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=20).filter(lambda s: s.strip())
free_text = st.text(min_size=1, max_size=80).filter(lambda s: s.strip())


# ------------------------------------------------------------------ fixtures: one store per module
@pytest.fixture(scope="module")
def offline_mem(shared_db, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"p_{uuid.uuid4().hex[:12]}", embedder=embedder)
    yield m
    m.close()


@pytest.fixture(scope="module")
def scripted():
    return ScriptedChatModel()


@pytest.fixture(scope="module")
def scripted_mem(shared_db, embedder, scripted):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"p_{uuid.uuid4().hex[:12]}", embedder=embedder, llm=scripted)
    yield m
    m.close()


def _uid() -> str:
    return f"p-{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------------------ Property 3
# **Feature: ai-memory-system, Property 3: Chitchat and Knowledge Query Filtering**
@given(text=chitchat())
def test_chitchat_and_knowledge_query_filtering_rules(offline_mem, text):
    """
    **Validates: Requirements 2.4**
    Greetings, single tokens, objective knowledge questions and fragments (Chinese and English):
    the offline rules' WriteDecider says write_episodic=false and add(infer=True) stores nothing.
    """
    decision = EpisodicWriteDecider(RulesProvider()).decide("c1", [{"role": "user", "content": text}])
    assert decision.write_episodic is False, (text, decision.reason)
    user = _uid()
    res = offline_mem.add(text, user_id=user, infer=True)
    assert not res.stored and res.ids == [] and offline_mem.get_all(user) == []


# **Feature: ai-memory-system, Property 3: Chitchat and Knowledge Query Filtering**
@given(text=free_text, chat=ids)
def test_chitchat_and_knowledge_query_filtering_scripted(scripted_mem, scripted, text, chat):
    """
    **Validates: Requirements 2.4**
    Whatever the turn, when the model's decision is write_episodic=false, add(infer=True) makes
    exactly one LLM call and writes nothing.
    """
    scripted.default = '{"write_episodic": false, "reason": "chitchat"}'
    user, before = _uid(), scripted.calls
    res = scripted_mem.add(text, user_id=user, chat_id=chat, infer=True)
    assert not res.stored and scripted.calls == before + 1 and scripted_mem.get_all(user) == []


# ------------------------------------------------------------------ Property 4
# **Feature: ai-memory-system, Property 4: Explicit Remember Request Storage**
@given(text=remember_request())
def test_explicit_remember_request_storage_rules(offline_mem, text):
    """
    **Validates: Requirements 2.5**
    An explicit remember phrase (记住/别忘了/remember/don't forget/note that...) with personal
    information: the rules' WriteDecider says true, and add(infer=True) stores one episodic memory
    with context, thing, time, chatid and who.
    """
    decision = EpisodicWriteDecider(RulesProvider()).decide("c1", [{"role": "user", "content": text}])
    assert decision.write_episodic is True, (text, decision.reason)
    user = _uid()
    res = offline_mem.add(text, user_id=user, chat_id="chat-p4", ts=T0, infer=True)
    assert res.stored and not res.pending_decision and len(res.ids) == 1
    rec = offline_mem.get(res.ids[0], user)
    assert rec.memory_type.value == "episodic" and rec.hit_count == 0
    assert {"context", "thing", "time", "chatid", "who"} <= rec.metadata.keys()
    assert rec.metadata["chatid"] == "chat-p4" and rec.metadata["who"] == user and rec.metadata["thing"].strip()


# **Feature: ai-memory-system, Property 4: Explicit Remember Request Storage**
@given(text=remember_request(), chat=ids)
def test_explicit_remember_request_storage_scripted(scripted_mem, scripted, text, chat):
    """
    **Validates: Requirements 2.5**
    When the model says write_episodic=true, exactly one episodic memory is written, in the
    turn's chat, with the seed's metadata fields.
    """
    scripted.default = lambda inputs: json.dumps(
        {"write_episodic": True, "context": "explicit request", "thing": inputs["turns"][0]["content"], "time": "", "who": "user"})
    user = _uid()
    res = scripted_mem.add(text, user_id=user, chat_id=chat, ts=T0, infer=True)
    recs = scripted_mem.get_all(user)
    assert res.stored and [r.id for r in recs] == res.ids
    meta = recs[0].metadata
    assert (meta["chatid"], meta["who"], meta["time"], meta["thing"]) == (chat, user, ts_to_iso(T0), text)


# ------------------------------------------------------------------ Property 7
# **Feature: ai-memory-system, Property 7: Hit Count Increment on Retrieval**
@given(n=st.integers(1, 4), rounds=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=5), min_size=1, max_size=3))
def test_hit_count_increment_on_retrieval(offline_mem, n, rounds):
    """
    **Validates: Requirements 3.5**
    Each time the chat hook reports a memory as used (mark_used), its hit_count rises by exactly 1,
    however often it is listed in that report; memories not reported keep their count.
    """
    user = _uid()
    mids = [offline_mem.add(f"memory number {i} of {user}", user_id=user, infer=False).ids[0] for i in range(n)]
    expected = dict.fromkeys(mids, 0)
    for used in rounds:
        chosen = [mids[i % n] for i in used]
        offline_mem.mark_used(chosen, user_id=user)
        for mid in set(chosen):
            expected[mid] += 1
    assert {m: offline_mem.get(m, user).hit_count for m in mids} == expected
    for mid in mids:
        hits = [h for h in offline_mem.history(mid, user) if h.action is HistoryAction.HIT]
        assert len(hits) == expected[mid]


# ------------------------------------------------------------------ Properties 8 and 9
updates_st = st.lists(st.fixed_dictionaries({"time": st.just("2025-01-01T00:00:00+00:00"), "desc": st.text(max_size=20)}), max_size=3)
result_st = st.builds(
    lambda text, context, thing, desc: {"changed": True, "text": text, "context": context, "thing": thing, "update_desc": desc,
                                        # a model that tries to move the memory: extra keys are ignored
                                        "time": "1999-01-01T00:00:00+00:00", "who": "mallory", "chatid": "elsewhere"},
    st.text(max_size=60), st.text(max_size=20), st.text(max_size=20), st.text(min_size=1, max_size=30).filter(lambda s: s.strip()),
)


def _stored(mem: Memory, user: str, chat: str, who: str, ts: int, updates: list, text: str) -> MemoryRecord:
    mid = mem.add(text, user_id=user, chat_id=chat, who=who, ts=ts, metadata={"updates": updates} if updates else None, infer=False).ids[0]
    return mem.get(mid, user)


# **Feature: ai-memory-system, Property 8: Reconsolidation Field Preservation**
@given(chat=ids, who=ids, ts=st.integers(1, 2**33), updates=updates_st, reply=result_st, text=free_text)
def test_reconsolidation_field_preservation(scripted_mem, scripted, chat, who, ts, updates, reply, text):
    """
    **Validates: Requirements 4.2**
    Whatever the Reconsolidator answers, the reconsolidated memory keeps metadata.time, chat_id,
    who and metadata.who (and ts and metadata.chatid) exactly as they were.
    """
    user = _uid()
    old = _stored(scripted_mem, user, chat, who, ts, updates, text)
    scripted.default = json.dumps(reply)
    scripted_mem.mark_used([old.id], user_id=user, context="user: something new about it")
    new = scripted_mem.get(old.id, user)
    assert (new.chat_id, new.who, new.ts) == (old.chat_id, old.who, old.ts)
    assert (new.metadata["time"], new.metadata["who"], new.metadata["chatid"]) == (old.metadata["time"], old.metadata["who"], old.metadata["chatid"])
    assert new.metadata["time"] == ts_to_iso(ts) and new.metadata["who"] == who


# **Feature: ai-memory-system, Property 9: Reconsolidation Updates Array Growth**
@given(chat=ids, updates=updates_st, reply=result_st, text=free_text)
def test_reconsolidation_updates_array_growth(scripted_mem, scripted, chat, updates, reply, text):
    """
    **Validates: Requirements 4.4**
    Every reconsolidation (the model says the conversation changed the memory) appends at least
    one {time, desc} entry to metadata.updates, keeping the earlier ones, and is recorded in history.
    """
    user = _uid()
    old = _stored(scripted_mem, user, chat, "user", T0, updates, text)
    scripted.default = json.dumps(reply)
    scripted_mem.mark_used([old.id], user_id=user, context="user: an update")
    new = scripted_mem.get(old.id, user)
    assert len(new.metadata["updates"]) >= len(updates) + 1
    assert new.metadata["updates"][: len(updates)] == updates
    assert all(set(u) >= {"time", "desc"} for u in new.metadata["updates"])
    assert [h.action for h in scripted_mem.history(old.id, user)][-1] is HistoryAction.RECONSOLIDATED


# **Feature: ai-memory-system, Property 9: Reconsolidation Updates Array Growth**
@given(updates=updates_st, reply=result_st, meta_time=st.one_of(st.none(), st.text(max_size=30)))
def test_reconsolidation_updates_array_growth_pure(updates, reply, meta_time):
    """
    **Validates: Requirements 4.4, 4.2**
    apply_reconsolidation alone: updates grows by exactly one, and time/chatid/who keep their
    values or stay absent, for any metadata shape.
    """
    meta = {"updates": updates, "chatid": "c", "who": "w"} | ({"time": meta_time} if meta_time is not None else {})
    old = MemoryRecord(id=1, user_id="u", memory_type="episodic", ts=0, chat_id="c", who="w", text="old", metadata=meta)
    text, new_meta = apply_reconsolidation(old, ReconsolidationResult.model_validate(reply), "2026-01-01T00:00:00+00:00")
    assert len(new_meta["updates"]) == len(updates) + 1 and text.strip()
    assert new_meta.get("time") == meta.get("time") and ("time" in new_meta) == ("time" in meta)
    assert (new_meta["chatid"], new_meta["who"]) == ("c", "w")
