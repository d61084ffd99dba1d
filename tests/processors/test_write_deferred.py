"""`write_decision: deferred` (issue 21): the write decision leaves the chat path.

add(infer=True) stores the turn at once, raw, with `pending_decision` (chitchat still goes
through the gate first and is dropped at once); search finds the raw turn meanwhile;
Memory.decide_pending decides it later (kept and rewritten, or removed, each with a history
event), and a failing model leaves it pending for the next try or for consolidation.
"""

from __future__ import annotations

import json
import uuid

import pytest

from hippocampus import LLMError, Memory
from hippocampus.models import HistoryAction
from hippocampus.testing import ScriptedChatModel

T0 = 1_767_000_000
TURN = "我下周三去上海出差，住在外滩附近"
YES = json.dumps({"write_episodic": True, "context": "出差", "thing": "下周三去上海出差，住外滩附近", "reason": "plan"})
NO = json.dumps({"write_episodic": False, "reason": "nothing to keep"})


@pytest.fixture
def scripted() -> ScriptedChatModel:
    return ScriptedChatModel()


@pytest.fixture
def mem(shared_db, embedder, scripted):
    m = Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder, llm=scripted,
               write_decision="deferred")
    yield m
    m.close()


def uid() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def test_deferred_add_stores_raw_and_pending_without_a_model_call(mem, scripted):
    user = uid()
    res = mem.add(TURN, user_id=user, chat_id="c1", ts=T0, infer=True)
    assert res.stored and res.pending_decision and len(res.ids) == 1 and res.reason.startswith("deferred: ")
    rec = mem.get(res.ids[0], user)
    assert rec.text == TURN and rec.metadata["pending_decision"] is True and rec.chat_id == "c1"
    # the gate still runs first: chitchat is dropped at once, a remember request is stored decided
    hi = mem.add("哈哈哈哈", user_id=user, infer=True)
    assert not hi.stored and hi.reason == "gate: laughter"
    noted = mem.add("请记住，我对青霉素过敏", user_id=user, infer=True)
    assert noted.stored and not noted.pending_decision and "pending_decision" not in mem.get(noted.ids[0], user).metadata
    assert scripted.calls == 0
    # meanwhile search finds the raw turn
    assert res.ids[0] in [h.id for h in mem.search("上海出差", user_id=user).episodic]


def test_decide_pending_keeps_rewrites_or_removes_with_history(mem, scripted):
    user = uid()
    kept = mem.add(TURN, user_id=user, ts=T0, infer=True).ids[0]
    gone = mem.add("Where do I live?", user_id=user, ts=T0 + 60, infer=True).ids[0]
    scripted.queue(YES, NO)
    assert mem.decide_pending(user_id=user) == 2 and scripted.calls == 2
    rec = mem.get(kept, user)
    assert rec.text == "下周三去上海出差，住外滩附近" and rec.metadata["source_text"] == TURN
    assert "pending_decision" not in rec.metadata and rec.metadata["context"] == "出差"
    assert [e.action for e in mem.history(kept, user)] == [HistoryAction.CREATED, HistoryAction.UPDATED]
    assert [e.id for e in mem.get_all(user)] == [kept]
    assert [e.action for e in mem.history(gone, user)] == [HistoryAction.CREATED, HistoryAction.DELETED]
    assert mem.decide_pending(user_id=user) == 0 and scripted.calls == 2  # nothing left to decide


def test_a_failure_leaves_the_turn_pending_for_the_next_try(mem, scripted):
    user = uid()
    mid = mem.add(TURN, user_id=user, ts=T0, infer=True).ids[0]
    scripted.queue(LLMError("scripted", 3, "HTTP 503"))
    assert mem.decide_pending(user_id=user) == 0
    rec = mem.get(mid, user)
    assert rec.metadata["pending_decision"] is True and rec.text == TURN
    assert [e.action for e in mem.history(mid, user)] == [HistoryAction.CREATED]
    scripted.queue(YES)  # consolidation decides pending turns too
    assert mem.consolidate(user_id=user).pending_decided == 1
    assert "pending_decision" not in mem.get(mid, user).metadata


def test_decide_pending_honours_limit_and_user(mem, scripted):
    alice, bob = uid(), uid()
    for n in range(2):
        mem.add(f"{TURN} {n}", user_id=alice, ts=T0 + n, infer=True)
    bobs = mem.add(TURN, user_id=bob, ts=T0, infer=True).ids[0]
    scripted.queue(YES, YES, YES)
    assert mem.decide_pending(user_id=alice, limit=1) == 1
    assert sum(bool(r.metadata.get("pending_decision")) for r in mem.get_all(alice)) == 1
    assert mem.decide_pending(user_id=alice, limit=0) == 0 and scripted.calls == 1
    assert mem.get(bobs, bob).metadata["pending_decision"] is True
    assert mem.decide_pending() == 2  # every user


def test_the_nightly_decision_reads_the_projects_instructions(shared_db, embedder):
    """Issue 40, case 6: consolidation built its WriteDecider as P(llm, prompts_dir), so a turn decided at
    night never saw the project's categories and instructions that the online prompt carries."""
    scripted = ScriptedChatModel()
    with Memory(milvus_uri=str(shared_db), collection_name=f"t_{uuid.uuid4().hex[:12]}", embedder=embedder, llm=scripted,
                write_decision="deferred", instructions="never store health data") as mem:
        user = uid()
        mem.add(TURN, user_id=user, ts=T0, infer=True)
        scripted.queue(YES)
        mem.consolidate(user)
    decided = [p for p in scripted.prompts if p.name == "write_decider"]
    assert decided and "never store health data" in decided[0].system
