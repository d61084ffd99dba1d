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
