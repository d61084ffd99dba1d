"""Forget by reference (issue 55, item 3): "昨天说的网贷那件事你忘了吧，别记着" and "the thing about my loan I
told you yesterday, forget it" forget the memories about the thing named (said in the window named, when
one is), through the existing forget machinery (restorable with undo), and the request is never stored.
Real milvus-lite; the offline rules are the model."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.embeddings import OfflineEmbedder
from hippocampus.models import HistoryAction
from hippocampus.text import forget_clauses, forget_terms

DAY = 86400


@pytest.mark.parametrize("said, terms", [
    ("昨天说的网贷那件事你忘了吧，别记着", {"网贷"}),
    ("上周跟你说的那个面试的事，忘掉吧", {"面试"}),
    ("the thing about my loan I told you yesterday, forget it", {"loan"}),
    ("forget what I said about the loan last week", {"loan"}),
    ("what I told you about my divorce, just forget it please", {"divorce"}),
    ("the stuff about my divorce I mentioned last week — please forget it", {"divorce"}),
])
def test_the_reference_is_part_of_the_request(said, terms):
    asks, rest = forget_clauses(said)
    assert rest == [] and forget_terms(asks) == terms


def test_look_alikes_are_no_request():
    assert forget_clauses("我说的那件事你别忘了")[0] == []
    assert forget_clauses("I forgot my keys yesterday")[0] == []
    assert forget_clauses("the thing about the loan, don't forget it")[0] == []
    assert forget_clauses("我把钥匙忘了")[0] == []


@pytest.fixture(scope="module")
def memory(shared_db: Path, embedder: OfflineEmbedder):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"r_{uuid.uuid4().hex[:8]}", embedder=embedder)
    yield m
    m.close()


@pytest.mark.parametrize("told, asked", [
    ("我在网贷平台借了2万块，每个月还款压力很大。", "昨天说的网贷那件事你忘了吧，别记着"),
    ("I took out a payday loan of 2,000 dollars and I'm struggling to repay it.",
     "the thing about my loan I told you yesterday, forget it"),
])
def test_forget_by_reference_forgets_the_thing_said_then_and_undo_brings_it_back(memory, told, asked):
    user = f"u{uuid.uuid4().hex[:6]}"
    yesterday = int(time.time()) - DAY
    kept = memory.add("I love hiking in the Alps." if told.isascii() else "我喜欢去阿尔卑斯山徒步。", user_id=user, infer=True, ts=yesterday)
    older = memory.add(told, user_id=user, infer=True, ts=yesterday - 20 * DAY)  # the same thing, said weeks ago
    gone = memory.add(told.replace("2", "3"), user_id=user, infer=True, ts=yesterday)
    result = memory.add(asked, user_id=user, infer=True)
    assert not result.stored and not result.ids, result
    left = {r.id: r.text for r in memory.get_all(user)}
    assert gone.ids[0] not in left and older.ids[0] in left and kept.ids[0] in left, left  # the window picks yesterday's
    assert not any("忘" in t or "forget" in t for t in left.values())
    event = next(e for e in memory.history(gone.ids[0], user) if e.action is HistoryAction.FORGOTTEN)
    memory.undo(event.event_id, user)
    assert any(r.text == told.replace("2", "3") for r in memory.get_all(user))
