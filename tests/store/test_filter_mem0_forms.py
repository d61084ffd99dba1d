"""The native API's answers to mem0's filter forms (issue 43): each used to be silently wrong or refused.
`{"x": "*"}` means the key is present, a date string compares as a date on created_at / updated_at,
`NOT` takes mem0's list (none of them holds), and a bare `category` names one thing: the lifecycle's,
refused as ambiguous for a user whose own metadata has a `category` key (metadata.category /
lifecycle.category say which). Real milvus-lite, the real offline embedder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hippocampus import InvalidInput, Memory
from hippocampus.store import filters as F


@pytest.fixture(scope="module")
def setup(shared_db: Path, embedder: Any) -> Iterator[tuple[Memory, dict[str, int]]]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"fm_{uuid.uuid4().hex[:10]}", embedder=embedder)
    ids = {
        "work": m.add("Prepare the quarterly report", user_id="ana", metadata={"category": "work", "status": "active"}).ids[0],
        "fact": m.add("Ana likes green tea", user_id="ana", memory_type="semantic",
                      metadata={"category": "fact", "status": "deleted"}).ids[0],
        "plain": m.add("Ana walked the dog", user_id="ana", metadata={"status": "archived"}).ids[0],
        "bare": m.add("Ana owns a bike", user_id="ana").ids[0],
        "bo_fact": m.add("Bo is a chemist", user_id="bo", memory_type="semantic").ids[0],
        "bo_walk": m.add("Bo walked to work", user_id="bo").ids[0],
    }
    yield m, ids
    m.close()


def _listed(m: Memory, user: str, filters: dict[str, Any]) -> set[int]:
    return {r.id for r in m.get_all(user, filters=filters)}


def _searched(m: Memory, user: str, filters: dict[str, Any]) -> set[int]:
    res = m.search("Ana Bo report tea dog bike chemist work", user_id=user, limit=50, filters=filters)
    return {h.id for h in res.all}


def test_a_wildcard_means_the_key_is_present(setup):
    m, ids = setup
    want = {ids["work"], ids["fact"]}
    assert _listed(m, "ana", {"metadata.category": "*"}) == want
    assert _searched(m, "ana", {"metadata.category": "*"}) == want
    assert _listed(m, "ana", {"status": "*"}) == {ids["work"], ids["fact"], ids["plain"]}
    assert _listed(m, "ana", {"metadata.category": {"eq": "*"}}) == set()  # the text itself, written as an operator


@pytest.mark.parametrize("key", ["created_at", "updated_at", "metadata.created_at"])
def test_a_date_string_compares_as_a_date(setup, key):
    m, ids = setup
    everyone = {ids["work"], ids["fact"], ids["plain"], ids["bare"]}
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
    assert _listed(m, "ana", {key: {"gte": "2024-07-01"}}) == everyone
    assert _searched(m, "ana", {key: {"gte": "2024-07-01T00:00:00Z"}}) == everyone
    assert _listed(m, "ana", {key: {"lt": "2024-07-01"}}) == set()
    assert _listed(m, "ana", {key: {"lte": tomorrow}}) == everyone
    assert _listed(m, "ana", {key: {"gte": tomorrow}}) == set()


def test_a_date_that_is_no_date_is_one_line():
    with pytest.raises(InvalidInput, match="takes epoch seconds or an ISO datetime"):
        F.caller_filter({"created_at": {"gte": "last summer"}})
    with pytest.raises(InvalidInput, match="contains applies to text fields"):
        F.caller_filter({"updated_at": {"contains": "2024"}})


def test_not_takes_mem0s_list_meaning_none_of_them(setup):
    m, ids = setup
    none_of = {"NOT": [{"status": "deleted"}, {"status": "archived"}]}
    assert _listed(m, "ana", none_of) == {ids["work"], ids["bare"]}
    assert _searched(m, "ana", none_of) == {ids["work"], ids["bare"]}
    assert _listed(m, "ana", {"NOT": [{"status": "deleted"}]}) == {ids["work"], ids["plain"], ids["bare"]}
    with pytest.raises(InvalidInput, match="NOT takes a filter or a non-empty list"):
        F.caller_filter({"NOT": []})


def test_category_is_the_lifecycles_and_refused_where_the_users_metadata_has_one(setup):
    m, ids = setup
    # bo has no metadata key "category": the bare name is the lifecycle's, as documented
    assert _listed(m, "bo", {"category": "fact"}) == {ids["bo_fact"]}
    assert _listed(m, "bo", {"category": {"in": ["fact"]}}) == {ids["bo_fact"]}
    # ana's own metadata has "category": a bare one would be a silent guess, so it is refused
    for f in ({"category": "fact"}, {"category": {"ne": "fact"}}, {"OR": [{"category": "fact"}, {"status": "x"}]}):
        with pytest.raises(InvalidInput, match="ambiguous.*metadata.category.*lifecycle.category"):
            m.get_all("ana", filters=f)
        with pytest.raises(InvalidInput, match="ambiguous"):
            m.search("tea", user_id="ana", filters=f)
    assert _listed(m, "ana", {"metadata.category": "fact"}) == {ids["fact"]}
    assert _listed(m, "ana", {"metadata.category": {"in": ["work", "fact"]}}) == {ids["work"], ids["fact"]}
    assert _listed(m, "ana", {"lifecycle.category": "fact"}) == {ids["fact"]}  # the semantic one's default
    assert _listed(m, "ana", {"lifecycle.category": {"ne": "fact"}}) == {ids["work"], ids["plain"], ids["bare"]}
    with pytest.raises(InvalidInput, match="lifecycle.category and lifecycle.state"):
        F.caller_filter({"lifecycle.mood": "x"})


@pytest.mark.parametrize("key", ["chat_id", "chatid", "who", "agent_id", "run_id"])
def test_a_star_on_an_id_stays_the_text(key):
    """An id may be `*` itself (tests/reliability/test_isolation.py): only metadata keys take the wildcard."""
    assert "exists" not in str(F.caller_filter({key: "*"}).residual) and "exists" not in F.caller_filter({key: "*"}).expr
