"""The shapes mem0's own Memory answers, asserted on the drop-in and, where mem0ai is installed, on mem0 itself
(tests/compat/reference.py): the same test passing on both is what makes it mem0's shape and not ours."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import BACKENDS, open_mem0

ITEM = ["id", "memory", "hash", "metadata", "created_at", "updated_at"]
HISTORY = {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted", "actor_id", "role"}


@pytest.fixture(params=BACKENDS)
def either(request: Any, shared_db: Path, embedder: Any, tmp_path: Path) -> Iterator[Any]:
    if request.param == "mem0":
        from .reference import open_reference

        m = open_reference(tmp_path, embedder)
    else:
        m = open_mem0(shared_db, embedder)
    yield m
    m.close()


def test_add_get_search_and_get_all_answer_mem0s_dicts(either: Any):
    added = either.add([{"role": "user", "content": "I like tennis"}, {"role": "system", "content": "be brief"}],
                       user_id="ana", metadata={"topic": "sport"}, infer=False)
    assert list(added) == ["results"] and len(added["results"]) == 1
    (one,) = added["results"]
    assert (one["memory"], one["event"], one["role"]) == ("I like tennis", "ADD", "user") and isinstance(one["id"], str)
    got = either.get(one["id"])
    assert list(got)[:7] == [*ITEM[:4], "score", *ITEM[4:]] and got["score"] is None
    assert (got["metadata"], got["user_id"], got["role"]) == ({"topic": "sport"}, "ana", "user")
    found = either.search("tennis", filters={"user_id": "ana"}, threshold=0.0)
    assert list(found) == ["results"] and [r["id"] for r in found["results"]] == [one["id"]]
    assert list(found["results"][0])[:7] == [*ITEM[:4], "score", *ITEM[4:]] and 0 < found["results"][0]["score"] <= 1
    listed = either.get_all(filters={"user_id": "ana"})
    assert list(listed["results"][0])[:6] == ITEM and "score" not in listed["results"][0]


def test_update_delete_history_and_delete_all_answer_mem0s_messages(either: Any):
    (one,) = either.add("I like tennis", user_id="ana", infer=False)["results"]
    assert either.update(one["id"], text="I like padel") == {"message": "Memory updated successfully!"}
    assert either.get(one["id"])["memory"] == "I like padel"
    history = either.history(one["id"])
    assert [set(h) for h in history] == [HISTORY, HISTORY]
    assert [(h["event"], h["old_memory"], h["new_memory"], h["is_deleted"]) for h in history] == \
        [("ADD", None, "I like tennis", False), ("UPDATE", "I like tennis", "I like padel", False)]
    assert either.delete(one["id"]) == {"message": "Memory deleted successfully!"}
    assert either.get(one["id"]) is None
    assert [h["event"] for h in either.history(one["id"])][-1] == "DELETE"
    either.add("Bo likes chess", user_id="bo", infer=False)
    either.add("Ana likes golf", user_id="ana", infer=False)
    assert either.delete_all(user_id="ana") == {"message": "Memories deleted successfully!"}
    assert either.get_all(filters={"user_id": "ana"}) == {"results": []}
    assert [r["memory"] for r in either.get_all(filters={"user_id": "bo"})["results"]] == ["Bo likes chess"]
    with pytest.raises(ValueError):
        either.delete_all()
    with pytest.raises(ValueError):
        either.search("x", user_id="bo")
