"""The TripleExtractor (issue 16, item 1): the offline degraded extractor on a bilingual fixture (the
entities a person would name, the certain typed triples with negation, nothing from stop words), the
processor's checks with a scripted model, and the prompt file's examples. No store, no milvus."""

from __future__ import annotations

import json

import pytest

from hippocampus.errors import InvalidInput, LLMError
from hippocampus.llm.rules import RulesProvider
from hippocampus.llm.rules.graph import entities_of, graph_of
from hippocampus.models import MemoryRecord, MemoryType
from hippocampus.processors.base import load_prompt
from hippocampus.processors.results import GraphEntity, TripleExtraction
from hippocampus.processors.triple_extractor import BATCH, TripleExtractor, speaker_of
from tests.consolidation_helpers import scripted_chat

TS = 1683554160  # 2023-05-08T13:56:00Z
NAMES = {"Caroline", "Melanie"}


def _record(id: int, text: str, who: str = "u") -> MemoryRecord:
    return MemoryRecord(id=id, user_id="u", memory_type=MemoryType.EPISODIC, ts=TS, chat_id="c", who=who, text=text)


def _names(graph: dict) -> set[str]:
    return {e["name"] for e in graph["entities"]}


def _triples(graph: dict) -> set[tuple]:
    return {(t["subject"], t["predicate"], t["object"], t["negated"], t["frequency"]) for t in graph["triples"]}


# (text, speaker, the entities a person names, the certain triples: subject, predicate, object, negated, frequency)
FIXTURE = [
    ("Caroline: I went to a LGBTQ support group yesterday and it was so powerful.", "Caroline",
     {"Caroline", "LGBTQ support group"}, {("Caroline", "went to", "LGBTQ support group", False, "")}),
    ("Melanie: Hey Caroline! Good to see you! I'm swamped with the kids & work.", "Melanie", set(), set()),
    ("Melanie: My sister Anna moved to Denver last May. I don't like flying, but I really love painting.", "Melanie",
     {"Melanie", "Anna", "Denver", "flying", "painting"},
     {("Anna", "sister of", "Melanie", False, ""), ("Melanie", "likes", "flying", True, ""),
      ("Melanie", "likes", "painting", False, "really")}),
    ("I live in Boston and I work at Stanford University.", "dana", {"dana", "Boston", "Stanford University"},
     {("dana", "lives in", "Boston", False, ""), ("dana", "works at", "Stanford University", False, "")}),
    ('Yesterday I read "Becoming" by Michelle Obama on Friday.', "dana", {"Becoming", "Michelle Obama"}, set()),
    ("I hate Mondays, but I'm from Lyon.", "dana", {"dana", "Lyon"}, {("dana", "from", "Lyon", False, "")}),
    ("我住在杭州。我很喜欢吃拉面，但是我不喜欢香菜", "小林", {"小林", "杭州", "拉面", "香菜"},
     {("小林", "住在", "杭州", False, ""), ("小林", "喜欢", "拉面", False, "很"), ("小林", "喜欢", "香菜", True, "")}),
    ("我的妹妹小雨在上海复旦大学读书", "小林", {"小林", "小雨", "上海复旦大学"}, {("小雨", "妹妹", "小林", False, "")}),
    ("我在阿里巴巴工作，周末常去西湖跑步", "小林", {"小林", "阿里巴巴", "西湖"}, {("小林", "工作于", "阿里巴巴", False, "")}),
    ("下雨的时候东西太多了，今天真累", "小林", set(), set()),
    ("我老公叫王强，我对花生过敏", "小林", {"小林", "王强", "花生"}, {("王强", "老公", "小林", False, "")}),
]


@pytest.mark.parametrize("text,speaker,entities,triples", FIXTURE, ids=[f[0][:24] for f in FIXTURE])
def test_the_offline_extractor_finds_what_a_person_would(text, speaker, entities, triples):
    graph = graph_of(text, speaker, NAMES)
    assert _names(graph) == entities
    assert _triples(graph) == triples
    assert all(t["condition"] == "" for t in graph["triples"])  # never guessed offline


def test_offline_types_come_from_tags_and_cues():
    types = {e["name"]: e["type"] for f in FIXTURE for e in graph_of(f[0], f[1], NAMES)["entities"]}
    assert types["Anna"] == types["Caroline"] == types["小雨"] == types["王强"] == "person"
    assert types["Boston"] == types["Denver"] == types["杭州"] == types["西湖"] == "place"
    assert types["Stanford University"] == types["阿里巴巴"] == types["上海复旦大学"] == "organisation"
    assert types["LGBTQ support group"] == "organisation" and types["Becoming"] == "thing"


def test_no_entity_from_stop_words_time_words_numbers_or_greetings():
    text = "Yesterday, Wow! The Monday meeting: I ran 5 km in 30 minutes. Thanks, Mel! 今天的时候东西很多，昨天也是"
    assert entities_of(text) == []
    assert entities_of("Thanks Maria, it was amazing. Sure, Sam.") == []  # only addressed: no mention


def test_entities_of_serves_queries():
    assert entities_of("Where does Caroline's sister Anna live?") == [("Caroline", "thing"), ("Anna", "person")]
    assert entities_of("小雨住在哪里？") == [("小雨", "person")]


def test_the_offline_rule_answers_the_processor_end_to_end():
    records = [_record(41, FIXTURE[0][0]), _record(42, "我喜欢猫", who="小林"), _record(43, "Nothing to see here.")]
    graphs = TripleExtractor(RulesProvider()).extract(records)
    assert [g.memory_id for g in graphs] == [41, 42, 43]
    assert {(t.subject, t.predicate, t.object) for t in graphs[0].triples} == {("Caroline", "went to", "LGBTQ support group")}
    assert [(t.subject, t.predicate, t.object) for t in graphs[1].triples] == [("小林", "喜欢", "猫")]
    assert graphs[2].entities == [] and graphs[2].triples == []


# --- the processor with a scripted model ------------------------------------------------------

def _triple(s: str, p: str, o: str, **meta) -> dict:
    return {"subject": s, "predicate": p, "object": o, **meta}


def _reply(items: list[dict]):
    return {"TripleExtraction": lambda _inputs: json.dumps({"items": items, "reason": "scripted"}, ensure_ascii=False)}


def test_the_processor_checks_the_models_answer():
    records = [_record(11, "Caroline: I went to the support group with my friend Jon.", who="u"),
               _record(12, "我不喜欢香菜", who="小林"), _record(13, "User: I live in Paris", who="dana")]
    items = [
        {"id": "m3", "entities": [{"name": "Paris", "type": "Location"}], "triples": [_triple("the user", "lives in", "Paris")]},
        {"id": "m9", "entities": [{"name": "Ghost", "type": "person"}], "triples": [_triple("Ghost", "haunts", "Paris")]},
        {"id": "m1", "entities": [{"name": "  support\n group ", "type": "organisation"}, {"name": "I", "type": "thing"}],
         "triples": [_triple("I", "went to", "support group"), _triple("i", "WENT TO", "Support Group"),
                     _triple("Jon", " friend  of ", "me", frequency=None, condition="null"),
                     _triple("Caroline", "likes", ""), _triple("Caroline", "x" * 101, "Jon"),
                     _triple("assistant", "helped", "Caroline")]},
        {"id": "[M2]", "triples": [_triple("我", "喜欢", "香菜", negated=True)]},
    ]
    chat = scripted_chat(_reply(items))
    graphs = TripleExtractor(chat).extract(records)

    shown = chat.prompts[-1].inputs["memories"]
    assert [(m["id"], m["speaker"], m["time"]) for m in shown] == [
        ("m1", "Caroline", "2023-05-08"), ("m2", "小林", "2023-05-08"), ("m3", "dana", "2023-05-08")]
    assert shown[0]["text"] == records[0].text
    assert [g.memory_id for g in graphs] == [11, 12, 13]  # aligned with the input, not the answer's order
    first, second, third = graphs
    assert [(t.subject, t.predicate, t.object) for t in first.triples] == [
        ("Caroline", "went to", "support group"), ("Jon", "friend of", "Caroline")]  # duplicate, empty, long, assistant dropped
    assert first.triples[1].frequency == "" and first.triples[1].condition == ""
    assert {(e.name, e.type) for e in first.entities} == {("support group", "organisation"), ("Caroline", "person"), ("Jon", "thing")}
    assert [(t.subject, t.object, t.negated) for t in second.triples] == [("小林", "香菜", True)]
    assert {e.name for e in second.entities} == {"小林", "香菜"}  # added: the model listed no entities
    assert [(t.subject, t.object) for t in third.triples] == [("dana", "Paris")]  # "User:" is a role, not a speaker
    assert {(e.name, e.type) for e in third.entities} == {("Paris", "place"), ("dana", "person")}
    assert all("Ghost" not in (e.name for e in g.entities) for g in graphs)


def test_a_model_failure_is_an_llm_error():
    chat = scripted_chat({"TripleExtraction": lambda _i: RuntimeError("timeout")})
    with pytest.raises(LLMError):
        TripleExtractor(chat).extract([_record(1, "I live in Paris")])
    with pytest.raises(LLMError):
        TripleExtractor(scripted_chat({"TripleExtraction": lambda _i: "not json at all"})).extract([_record(1, "I live in Paris")])


def test_batches_are_bounded_and_empty_asks_nothing():
    chat = scripted_chat(_reply([]))
    with pytest.raises(InvalidInput):
        TripleExtractor(chat).extract([_record(i, f"memory {i}") for i in range(BATCH + 1)])
    assert TripleExtractor(chat).extract([]) == [] and chat.calls == 0
    graphs = TripleExtractor(chat).extract([_record(i, f"memory {i}") for i in range(BATCH)])
    assert [g.memory_id for g in graphs] == list(range(BATCH)) and chat.count("TripleExtraction") == 1


def test_the_speaker_is_the_leading_name_else_who():
    assert speaker_of(_record(1, "Caroline: I went there", who="u")) == "Caroline"
    assert speaker_of(_record(1, "Dr. Wang: rest more", who="u")) == "Dr. Wang"
    assert speaker_of(_record(1, "小雨：我到了", who="u")) == "小雨"
    for text in ("I went there: it was fun", "Note: buy milk", "user: hi", "计划：去北京", "我的计划：去北京"):
        assert speaker_of(_record(1, text, who="dana")) == "dana"


def test_result_models_take_what_small_models_write():
    parsed = TripleExtraction.model_validate({"items": [{"id": 2, "entities": [{"name": "X", "type": "Organization"},
                                                                               {"name": "Y", "type": "galaxy"}],
                                                         "triples": [{"subject": "a", "predicate": "b", "object": "c",
                                                                      "negated": None, "condition": None}]}]})
    item = parsed.items[0]
    assert item.id == "m2" and [e.type for e in item.entities] == ["organisation", "thing"]
    assert item.triples[0].negated is False and item.triples[0].condition == "" and item.triples[0].frequency == ""
    assert GraphEntity(name="Z").type == "thing"


# --- the prompt file ---------------------------------------------------------------------------

def test_the_prompt_renders_and_its_examples_are_valid_answers():
    template = load_prompt("triple_extractor")
    prompt = template.render(memories=[{"id": "m1", "speaker": "Caroline", "time": "2023-05-08", "text": "I live in Paris"}])
    assert "I live in Paris" in prompt.user and "negated" in prompt.system
    assert len(template.examples) >= 2
    languages, negated, conditions = set(), 0, 0
    for example in template.examples:
        answer = TripleExtraction.model_validate(example.output)
        shown = [m["id"] for m in example.input["memories"]]
        assert [item.id for item in answer.items] == shown
        languages |= {"zh" if any("\u4e00" <= ch <= "\u9fff" for ch in m["text"]) else "en" for m in example.input["memories"]}
        for item in answer.items:
            names = {e.name for e in item.entities}
            assert all(t.subject in names and t.object in names for t in item.triples)
            negated += sum(t.negated for t in item.triples)
            conditions += sum(bool(t.condition) for t in item.triples)
    assert languages == {"zh", "en"} and negated >= 1 and conditions >= 1
