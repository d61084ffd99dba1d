"""A correction said to the chat hook never loses data (issue 40, case 2).

`add("我住在巴黎", infer=True)` then `add("其实我已经不住在巴黎了，上周搬到了罗马", infer=True)` answered
stored=False, "superseded memories [1]": the old home was erased and the new one never stored, so "我住在
哪里？" found nothing. Now the correction is stored in the same step, only what it corrects is superseded,
and what else the old memory said ("My name is Li Wei" beside the old employer) stays findable.
Real milvus-lite, the bundled embedder, the offline rules; a property over correction templates in both
languages."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hippocampus import Memory

CITIES = [("Paris", "Rome"), ("Berlin", "Madrid"), ("Lisbon", "Vienna"), ("Oslo", "Prague"), ("Dublin", "Warsaw")]
ZH_CITIES = [("巴黎", "罗马"), ("北京", "上海"), ("成都", "杭州"), ("广州", "深圳"), ("南京", "西安")]
FIRMS = [("Contoso", "Fabrikam"), ("Initech", "Globex"), ("Umbrella", "Hooli"), ("Acme", "Wayne Enterprises")]

# (what was said first, the correction, the question about the slot, the new value, the old value)
TEMPLATES = {
    "en-home": lambda a, b: (f"I live in {a}", f"I don't live in {a} anymore, I moved to {b} last week", "Where do I live?"),
    "en-home-2": lambda a, b: (f"I live in {a} with my cat", f"Actually I moved to {b} in May", "Where do I live now?"),
    "en-work": lambda a, b: (f"I work at {a}", f"I no longer work at {a}, I joined {b} in May", "Where do I work?"),
    "zh-home": lambda a, b: (f"我住在{a}", f"其实我已经不住在{a}了，上周搬到了{b}", "我住在哪里？"),
    "zh-home-2": lambda a, b: (f"我现在住在{a}", f"我上个月搬到{b}了", "我住在哪？"),
}
PAIRS = {"en-home": CITIES, "en-home-2": CITIES, "en-work": FIRMS, "zh-home": ZH_CITIES, "zh-home-2": ZH_CITIES}


@pytest.fixture(scope="module")
def store(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"corr_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield memory
    memory.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(TEMPLATES)), pick=st.integers(0, 3), noise=st.booleans())
def test_a_correction_stores_the_new_state_and_erases_nothing(store, kind, pick, noise):
    old, new = PAIRS[kind][pick % len(PAIRS[kind])]
    first, correction, question = TEMPLATES[kind](old, new)
    user = f"u{uuid.uuid4().hex[:10]}"
    if noise:  # something else the user said, never named by the correction
        store.add("My sister Ana is a nurse", user_id=user, infer=True)
    assert store.add(first, user_id=user, infer=True).stored
    result = store.add(correction, user_id=user, infer=True)
    assert result.stored, result.reason
    hits = store.search(question, user_id=user).all
    assert hits and new in hits[0].memory.text, [h.memory.text for h in hits]
    everything = [r.text for r in store.get_all(user) if r.life.superseded_by is None]
    assert any(new in t for t in everything)
    if noise:
        assert "My sister Ana is a nurse" in everything  # nothing unnamed left unfindable


def test_only_the_corrected_slot_is_superseded(store):
    """Name and employer in one sentence: the employer changes, the name stays findable."""
    user = f"u{uuid.uuid4().hex[:10]}"
    store.add("My name is Li Wei and I work at Contoso", user_id=user, infer=True)
    result = store.add("I no longer work at Contoso, I joined Fabrikam in May", user_id=user, infer=True)
    assert result.stored and "superseded" in result.reason
    assert "Fabrikam" in store.search("Where do I work?", user_id=user).all[0].memory.text
    name = [h.memory.text for h in store.search("What is my name?", user_id=user).all]
    assert any("Li Wei" in t for t in name), name
    active = [r.text for r in store.get_all(user) if r.life.superseded_by is None]
    assert not any("Contoso" in t and "Fabrikam" not in t for t in active), active
    kept = [r for r in store.get_all(user) if r.metadata.get("split_from")]
    assert [r.text for r in kept] == ["My name is Li Wei"]
    assert any(h.memory.text.startswith("My name is Li Wei and") for h in store.search("Contoso", user_id=user, include_superseded=True).all)


def test_a_correction_the_rules_would_not_keep_is_kept(store):
    """A correction that states no new value ("I don't eat meat anymore") is the newest memory itself."""
    user = f"u{uuid.uuid4().hex[:10]}"
    store.add("I eat meat every day", user_id=user, infer=True)
    result = store.add("I don't eat meat anymore", user_id=user, infer=True)
    assert result.stored
    texts = [h.memory.text for h in store.search("Do I eat meat?", user_id=user).all]
    assert texts[0] == "I don't eat meat anymore", texts
