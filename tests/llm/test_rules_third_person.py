"""Distilled facts are whole sentences in one person (issue 40, case 4): "用户：用户和家人家的 WiFi 密码是…" and
"The user is allergic to shellfish — shrimp gives me hives" came out of the offline SemanticWriter. A
property over the distiller's rules: every fact names the user once, at the start, in the third person,
and no first person is left in it."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hippocampus.llm.rules.writing import extract_facts, third_person

EN_HEADS = ["I am allergic to {x}", "I love {x}", "I really enjoy {x}", "My favourite food is {x}", "We have {x}",
            "Our flat is near {x}", "I work at {x}", "I live in {x}", "I don't eat {x}", "I have {x}"]
EN_TAILS = ["", " — it gives me hives", " and my wife loves it too", ", which my doctor told me to avoid", " with my family",
            " and we go there every week", " because it reminds me of home"]
EN_THINGS = ["shellfish", "peanuts", "Lisbon", "a golden retriever", "Contoso", "ramen", "two cats", "the old station"]
ZH_HEADS = ["我对{x}过敏", "我们家的{x}", "我喜欢{x}", "我在{x}工作", "我们住在{x}", "我妈妈说我{x}", "其实我不吃{x}", "我有{x}"]
ZH_THINGS = ["芒果", "WiFi密码是abc123", "成都", "华为", "血压有点高", "两只猫", "香菜"]
ZH_TAILS = ["", "，我老公也是", "，医生让我多注意", "，我们每周都去"]
FIRST_EN = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself|we|we're|us|our|ours)\b")


@settings(max_examples=80, deadline=None)
@given(head=st.sampled_from(EN_HEADS), x=st.sampled_from(EN_THINGS), tail=st.sampled_from(EN_TAILS))
def test_english_facts_are_third_person_throughout(head, x, tail):
    clause = head.format(x=x) + tail
    fact = third_person(clause)
    assert fact.startswith("The user") and not fact.startswith("The user:"), fact
    assert not FIRST_EN.search(fact[len("The user"):]), fact
    for extracted in extract_facts({"text": clause}, []):
        assert extracted.startswith("The user") and not FIRST_EN.search(extracted[len("The user"):]), extracted


@settings(max_examples=60, deadline=None)
@given(head=st.sampled_from(ZH_HEADS), x=st.sampled_from(ZH_THINGS), tail=st.sampled_from(ZH_TAILS))
def test_chinese_facts_name_the_user_once(head, x, tail):
    clause = head.format(x=x) + tail
    for fact in [third_person(c) for c in clause.split("，")] + extract_facts({"text": clause}, []):
        assert fact.count("用户") == 1 and "我" not in fact and not fact.startswith("用户："), fact


def test_the_two_facts_the_tester_saw():
    assert third_person("我们家的 WiFi 密码是 abc123") == "用户家的 WiFi 密码是 abc123"
    assert third_person("I am allergic to shellfish — shrimp gives me hives") == \
        "The user is allergic to shellfish — shrimp gives them hives"
