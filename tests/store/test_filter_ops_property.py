"""The filter property on milvus-lite: for filters in mem0's syntax drawn by hypothesis (operators on
columns, lifecycle fields and metadata of mixed types, AND / OR / NOT), a filtered `list` and a filtered
`search` return exactly the memories that the reference evaluator (tests/store/filter_ops_support.py,
written from docs/filters.md) picks from the unfiltered `list`. The same check runs on the Milvus 2.3
server in tests/store/test_store_servers.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings

from hippocampus import Memory
from hippocampus.models import MemoryRecord
from tests.store.filter_ops_support import FILTERS, check, fill


@pytest.fixture(scope="module")
def store(shared_db: Path, embedder: Any) -> Iterator[tuple[Memory, list[MemoryRecord]]]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"fop_{uuid.uuid4().hex[:10]}", embedder=embedder)
    fill(m, "u")
    fill(m, "other")  # another user's identical rows never leak in
    yield m, m.get_all("u")
    m.close()


@settings(max_examples=60)
@given(f=FILTERS)
@example(f={"n": 1})  # true == 1 in Milvus' JSON comparison: only the number matches here
@example(f={"NOT": {"n": 1}})  # Milvus' three-valued NOT would drop the rows without `n`
@example(f={"n": {"in": [1, "hello"]}})  # `in` on a JSON path, which milvus-lite refuses
@example(f={"s": {"contains": "%"}})  # like's wildcard taken literally
@example(f={"s": {"icontains": "école"}})
@example(f={"OR": [{"chat_id": "c1"}, {"metadata.nest.k": {"gte": 3}}], "who": {"ne": "ana"}})
@example(f={"tags": {"contains": "re"}, "category": {"nin": ["todo"]}})
def test_a_filtered_list_and_search_are_the_reference_evaluation_of_the_unfiltered_list(store, f: dict[str, Any]):
    m, everything = store
    check(m, "u", f, everything)
