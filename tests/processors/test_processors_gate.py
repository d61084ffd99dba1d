"""The write gate (issue 21): the rules decide the certain turns before the model is asked.

The table on bilingual cases (certain skips, certain stores, turns it must leave to the model),
then the write path with a ScriptedChatModel: gated turns make no model call, the others one each,
and the eval script's side-by-side report of rules, model and gate + model.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.config import MemoryConfig
from hippocampus.processors.gate import RULES, gate, gate_rule
from hippocampus.processors.write_decider import gate_enabled
from hippocampus.testing import ScriptedChatModel

DATA = Path(__file__).resolve().parents[1] / "data"
NOW = "2026-03-01T10:00:00+00:00"
YES = json.dumps({"write_episodic": True, "context": "trip", "thing": "goes to Shanghai next week", "reason": "plan"})
NO = json.dumps({"write_episodic": False, "reason": "model: nothing personal"})


def said(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


CERTAIN_SKIPS = [
    ("你好", "greeting"), ("早上好呀！", "greeting"), ("Hello there! How are you?", "greeting"), ("thanks a lot!", "greeting"),
    ("谢谢你，太有帮助了", "greeting"), ("我知道了，谢谢你。", "greeting"), ("哈哈，太好笑了", "greeting"),
    ("哈哈哈哈", "laughter"), ("lol", "laughter"), ("ha ha ha", "laughter"),
    ("那个……", "fragment"), ("hmm, and then", "fragment"),
    ("1+1等于几", "arithmetic"), ("What is 2+2?", "arithmetic"),
    ("法国的首都是哪里？", "knowledge question"), ("How do vaccines work?", "knowledge question"),
    ("Can you recommend a good sci-fi novel?", "knowledge question"), ("Python 的装饰器怎么用？", "knowledge question"),
    ("帮我写一首关于秋天的诗", "content request"), ("把这句话翻译成英文：今天天气很好", "content request"),
    ("Translate 'good night' into Spanish", "content request"), ("Tell me a joke", "content request"), ("给我讲个笑话吧", "content request"),
    ("哈哈哈哈笑死我了", "laughter"), ("Why do cats purr?", "knowledge question"),  # a generic "cats" is nobody's pet
    ("第二次世界大战是哪一年结束的？", "knowledge question"),  # asking when is no event time
    ("用Python写一个冒泡排序", "content request"), ("Tell me another dad joke", "content request"),
    ("忘掉我刚才说的", "forget request"), ("请忘记我的地址", "forget request"), ("把我说的地址忘了吧", "forget request"),
    ("forget what I said about Paris", "forget request"), ("这个别记", "forget request"),
    ("今天天气真不错", "weather remark"), ("The weather is nice today", "weather remark"),
    ("我们来聊聊今天的天气吧", "weather remark"), ("Is it going to rain tomorrow?", "weather remark"),
    ("I wonder how tall Mount Everest is.", "knowledge question"), ("给奶茶店起五个好记的名字", "content request"),
    ("Give me a regex that matches US zip codes", "content request"),  # "US" in capitals is no "us"
    ("帮我把这句话改得礼貌一点：请尽快回复邮件。", "content request"),  # "一点" is "a bit", not one o'clock
]
CERTAIN_STORES = [
    ("请记住，我对青霉素过敏", "我对青霉素过敏"),
    ("别忘了我生日是十月八号", "我生日是十月八号"),
    ("帮我记一下：车停在B2层48号", "车停在B2层48号"),
    ("Please remember that I'm allergic to penicillin", "I'm allergic to penicillin"),
    ("Don't forget my dentist appointment on Friday", "my dentist appointment on Friday"),
]
FOR_THE_MODEL = [
    "我下周去上海出差，有什么推荐？",  # a question that carries a personal fact
    "下周去上海出差有什么推荐？",  # ... without 我
    "老婆生日送什么礼物好？",
    "I'm moving to Seattle next month, any tips?",
    "刚从北京出差回来，累死了。",  # personal facts stated without "I am"
    "医生给我开了一周的药",
    "Vegetarian since 2019.",
    "Allergic to peanuts, by the way",
    "Just got back from Lisbon, the food was amazing.",
    "我叫王芳，在成都当小学老师",
    "Forget what I said about Paris, I'm moving to Rome next month",  # a forget request with news in it
    "我忘记带钥匙了", "忘记告诉你了，我下周搬家", "I forget things easily",  # "forget" that asks nothing
    "记住这个", "你还记得我叫什么吗",  # a remember request naming nothing; a question about memory
    "帮我写一封邮件：我下周请假", "Write a poem about my dog",  # requests about the speaker
    "Where do I live?", "It rained on our wedding day", "明天要下雨，我得带伞", "下雪了，航班取消了",  # weather with plans in it
    "Recommend a gift for my dad", "给孩子起个名字", "I wonder if I should quit my job", "明天下午一点开会",
    "Name: Li Wei, age 32",  # a form filled in, not "name a ..."
    "Mom's surgery went fine, what should she eat now?", "Any tips for Dad's 60th birthday?",  # a parent written as a name
    "我明年什么时候能毕业？",  # asking when, with a first person
]


def test_the_table_has_one_row_per_name_and_a_known_outcome():
    names = [row.name for row in RULES]
    assert len(names) == len(set(names)) and {row.outcome for row in RULES} == {"skip", "store"}
    assert [row.name for row in RULES if row.when_answering] == ["forget request", "remember request"]


@pytest.mark.parametrize(("text", "rule"), CERTAIN_SKIPS)
def test_certain_skips(text: str, rule: str):
    decision = gate(said(text), NOW)
    assert decision is not None and decision.write_episodic is False
    assert decision.reason.startswith(f"gate: {rule}") and gate_rule(said(text)).name == rule


def test_a_forget_request_names_itself_and_says_nothing_is_deleted():
    reason = gate(said("忘掉我刚才说的"), NOW).reason
    assert reason.startswith("gate: forget request") and "deleting" in reason


@pytest.mark.parametrize(("text", "thing"), CERTAIN_STORES)
def test_certain_stores_keep_the_rules_extraction(text: str, thing: str):
    decision = gate(said(text), NOW)
    assert decision is not None and decision.write_episodic is True
    assert decision.reason == "gate: remember request" and decision.thing == thing and decision.context
    assert decision.who == "user" and decision.time.startswith("2026-03")


@pytest.mark.parametrize("text", FOR_THE_MODEL)
def test_uncertain_turns_go_to_the_model(text: str):
    assert gate(said(text), NOW) is None


def test_a_reply_to_an_assistants_question_goes_to_the_model_unless_it_asks_to_remember():
    asked = {"role": "assistant", "content": "Do you have any pets?"}
    for reply in ("yes, two", "北京", "Biscuit", "no"):
        assert gate([asked, {"role": "user", "content": reply}], NOW) is None
    remembered = gate([asked, {"role": "user", "content": "please remember that I have two cats"}], NOW)
    assert remembered.write_episodic and remembered.thing == "I have two cats"
    # an assistant's words alone, or a statement before "thanks": the usual rules
    assert gate([{"role": "assistant", "content": "Hello!"}], NOW) is None
    assert gate([{"role": "user", "content": "好的，明白了"}, {"role": "assistant", "content": "不客气！"}], NOW).reason == "gate: greeting"


def test_gate_runs_for_a_real_model_or_a_deferred_decision():
    def cfg(**kw) -> MemoryConfig:
        return MemoryConfig(milvus_uri="/tmp/unused.db", **kw)

    real = dict(llm_provider="openai", llm_base_url="http://127.0.0.1:9/v1")
    assert cfg().llm_gate == "on" and cfg().write_decision == "online"
    assert gate_enabled(cfg(**real)) and not gate_enabled(cfg(llm_gate="off", **real))
    assert not gate_enabled(cfg())  # the offline provider decides those turns alike
    assert gate_enabled(cfg(write_decision="deferred")) and not gate_enabled(cfg(write_decision="deferred", llm_gate="off"))
    assert cfg(llm_gate=False).llm_gate == "off" and cfg(llm_gate=True).llm_gate == "on"  # YAML's bare on / off


# ------------------------------------------------------------------ the write path, with a scripted model
@pytest.fixture
def scripted() -> ScriptedChatModel:
    return ScriptedChatModel()


def _memory(shared_db, embedder, llm, **kw) -> Memory:
    return Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder, llm=llm,
                  llm_provider="openai", llm_base_url="http://127.0.0.1:9/v1", **kw)


def test_gated_turns_make_no_model_call_and_the_others_one(shared_db, embedder, scripted):
    user = f"u-{uuid.uuid4().hex[:8]}"
    with _memory(shared_db, embedder, scripted) as mem:
        for text in ("你好", "lol", "What is the capital of Australia?", "1+1等于几", "帮我写一首关于秋天的诗", "忘掉我刚才说的"):
            res = mem.add(text, user_id=user, infer=True)
            assert not res.stored and res.ids == [] and res.reason.startswith("gate: ")
        res = mem.add("请记住，我对青霉素过敏", user_id=user, chat_id="c1", infer=True)
        assert res.stored and res.reason == "gate: remember request" and scripted.calls == 0
        rec = mem.get(res.ids[0], user)
        assert rec.text == "我对青霉素过敏" and rec.metadata["source_text"] == "请记住，我对青霉素过敏"
        assert rec.metadata["write_reason"] == "gate: remember request" and rec.chat_id == "c1"

        scripted.queue(YES, NO)
        kept = mem.add("我下周去上海出差，有什么推荐？", user_id=user, infer=True)
        assert kept.stored and scripted.calls == 1 and mem.get(kept.ids[0], user).text == "goes to Shanghai next week"
        dropped = mem.add("Where do I live?", user_id=user, infer=True)
        assert not dropped.stored and dropped.reason == "model: nothing personal" and scripted.calls == 2


def test_gate_off_asks_the_model_for_every_turn(shared_db, embedder, scripted):
    with _memory(shared_db, embedder, scripted, llm_gate="off") as mem:
        scripted.queue(NO)
        res = mem.add("你好", user_id="u-off", infer=True)
        assert not res.stored and res.reason == "model: nothing personal" and scripted.calls == 1


# ------------------------------------------------------------------ the eval script
def test_eval_script_reports_rules_model_and_gate_side_by_side(tmp_path):
    from scripts.eval_processors import SECTIONS, compare_write_paths, load_cases, main

    out = tmp_path / "eval.json"
    assert main(["--gate", "--only", "write_decider", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    paths = report["write_paths"]
    assert report["results"] == {} and paths["model"].startswith("rules provider")
    assert paths["rules alone"]["accuracy"] == paths["model alone"]["accuracy"]  # offline, the model is the rules provider
    assert paths["model alone"]["model_calls_per_turn"] == 1.0 and paths["rules alone"]["model_calls_per_turn"] == 0.0
    gated = paths["gate + model"]
    assert 0.3 < gated["model_calls_per_turn"] < 0.8 and gated["gate_right"] / gated["gate_decided"] >= 0.95

    # a model that stores everything: the gate takes back the turns it is sure of
    cases = load_cases(DATA, SECTIONS["write_decider"], None)
    eager = compare_write_paths(ScriptedChatModel(default=YES), cases)
    assert eager["gate + model"]["accuracy"] > eager["model alone"]["accuracy"] + 0.3
    assert eager["gate + model"]["model_calls_per_turn"] == pytest.approx(1 - eager["gate + model"]["gate_decided"] / len(cases))
