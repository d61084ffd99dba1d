"""A clause with no first-person subject does not state the user's slot (issue 55): "The rent in Paris is 2000",
"the rent here is crazy, 3000 for a studio" and "他的房租是5000" once superseded the user's rent (a clause with no
subject was read as the user's, and rent always counted as the user's). An elided first person ("Moved to
Denver last month.", "房租涨到6950了") and "my landlord raised the rent" are still the user's."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.text.slots import corrected, read

IMPERSONAL = [
    ("My rent is $2800 a month.", "The rent in Paris is 2000."),
    ("My rent is $2800 a month.", "the rent here is crazy, 3000 for a studio"),
    ("我房租每月6800元", "他的房租是5000"),
    ("我的房租是3200", "北京的房租是6000"),
]
STILL_THE_USERS = [
    ("I live in Portland.", "Moved to Denver last month."),
    ("我房租每月6800元", "房租涨到6950了"),
    ("My rent is $2800 a month.", "My landlord raised the rent to 3000."),
    ("The rent for the new place is 6800.", "We negotiated it down to 6650."),
    ("I live in Portland.", "Living in Denver now."),
    ("Please answer in English.", "Actually, answer in Chinese from now on."),
    ("新房子的房租是5500", "新房子的房租最后定在5200"),
]


@pytest.fixture(scope="module")
def store(shared_db: Path, embedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"falsesup_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield m
    m.close()


@pytest.mark.parametrize("old,new", IMPERSONAL)
def test_a_clause_about_a_place_or_someone_else_states_no_slot_of_the_users(old: str, new: str) -> None:
    assert not [s for s in read(new) if s.subject == "user"], read(new)
    assert corrected(read(old), read(new)) == []


@pytest.mark.parametrize("old,new", STILL_THE_USERS)
def test_an_elided_first_person_is_still_the_users(old: str, new: str) -> None:
    assert corrected(read(old), read(new))


@pytest.mark.parametrize("old,new", IMPERSONAL)
def test_the_add_path_keeps_the_users_rent(store: Memory, old: str, new: str) -> None:
    user = f"f_{uuid.uuid4().hex[:8]}"
    first = store.add(old, user_id=user, infer=True).ids[0]
    store.add(new, user_id=user, infer=True)
    assert store.get(first, user).life.superseded_by is None
    assert store.search("what is my rent?", user_id=user).all[0].id == first


# Someone else's name, employer or age, or a past move, read as the user's slot (silent loss through
# add(..., infer=True)): a pet brought in by what it is ("养了一只橘猫，叫大橘"), another's pet ("我邻居家的狗"),
# "我的新老板叫Fiona", a clause with no subject after another's ("我男朋友是程序员，在百度上班", "我家狗叫豆豆，五岁了"),
# and a move dated in the past ("moved to New York at 22").
NOT_THE_USERS = [
    ("家里养了一只橘猫，叫大橘", "我叫陈静"),
    ("我养了一只猫叫咪咪", "我叫王磊"),
    ("我叫陈静", "家里养了一只橘猫，叫大橘"),
    ("我叫陈静", "我邻居家的狗叫小黑"),
    ("我叫王磊", "我同事的猫叫雪球"),
    ("我叫陈静", "朋友家的狗叫旺财"),
    ("我叫陈静", "我的新老板叫Fiona"),
    ("我叫王磊", "我前老板叫王强"),
    ("我家狗叫豆豆", "我表姐养了一只英短，叫年糕"),
    ("我家狗叫豆豆", "我表妹养了一条狗，叫旺财"),
    ("My name is Sean.", "My sister has a cat called Luna."),
    ("I live in Boston.", "I moved to New York at 22."),
    ("I live in Boston.", "I moved to Seattle in 2015."),
    ("我住在上海", "我22岁搬到了北京"),
    # a name of another kind stands beside the name; "he" and "she" need not be one person
    ("我叫陈静", "我英文名叫Fiona"),
    ("My name is Chen Jing.", "My English name is Fiona."),
    ("My name is Sean.", "My nickname is Fifi."),
    ("我叫王晓雨", "我的小名叫妞妞"),
    ("He lives in Paris.", "She lives in Rome."),
    ("他在腾讯上班", "她在阿里上班"),
]
CARRIED_SUBJECT = [
    ("我在腾讯工作", "我男朋友是程序员，在百度上班", ("boyfriend", "employer", "baidu")),
    ("我今年三十岁", "我家狗叫豆豆，五岁了", ("dog", "age", "5")),
    ("我叫陈静", "家里养了一只橘猫，叫大橘", ("cat", "name", "大橘")),
    ("我家狗叫豆豆", "我表姐养了一只英短，叫年糕", ("cousin's pet", "name", "年糕")),
    ("我叫陈静", "我邻居家的狗叫小黑", ("neighbor's dog", "name", "小黑")),
    ("我叫陈静", "我的新老板叫Fiona", ("boss", "name", "fiona")),
    ("My name is Sean.", "I have a cat called Mochi.", ("cat", "name", "mochi")),
]
STILL_CORRECTIONS = [
    ("我叫王晓雨", "我叫王晓宇"),
    ("我叫王晓雨", "其实我的名字是王晓宇"),
    ("I live in Portland.", "I moved to Denver last month."),
    ("My name is Shawn.", "My name is Sean."),
    ("我英文名叫Fiona", "我英文名叫Fanny，不叫Fiona"),  # a name of a kind: corrected when the old one is taken back
    ("My English name is Fiona.", "My English name is Fanny, not Fiona."),
]


@pytest.mark.parametrize("old,new", NOT_THE_USERS)
def test_another_ones_name_or_a_past_move_corrects_nothing(old: str, new: str) -> None:
    assert corrected(read(old), read(new)) == [], (read(old), read(new))


@pytest.mark.parametrize("old,new,said", CARRIED_SUBJECT)
def test_the_statement_is_about_whom_the_text_names(old: str, new: str, said: tuple[str, str, str]) -> None:
    assert said in [(s.subject, s.attribute, s.value) for s in read(new)], read(new)
    assert not [s for s in read(new) if s.subject == "user"], read(new)


@pytest.mark.parametrize("old,new", STILL_CORRECTIONS)
def test_the_users_own_correction_still_supersedes(old: str, new: str) -> None:
    assert corrected(read(old), read(new))


@pytest.mark.parametrize("old,new", list(dict.fromkeys(NOT_THE_USERS + [(o, n) for o, n, _ in CARRIED_SUBJECT])))
def test_the_add_path_keeps_the_earlier_memory(store: Memory, old: str, new: str) -> None:
    user = f"f_{uuid.uuid4().hex[:8]}"
    first = store.add(old, user_id=user, infer=True).ids[0]
    store.add(new, user_id=user, infer=True)
    assert store.get(first, user).life.superseded_by is None
