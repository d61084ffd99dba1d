"""Tenant isolation: adversarial user ids never read or change another tenant's memories or history.

Each test uses one Memory (fresh collection) with two fixed victims; hypothesis throws adversarial ids
(quotes, backslashes, `or`, `||`, `in`, brackets, Chinese, emoji, whitespace, control characters,
over-long ids) at every operation. After each example the victims' rows (every field, the vectors
included) and history, read straight from the store, must equal the snapshot taken before.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hippocampus import InvalidInput, Memory, NotFound

from ._support import (
    COUNTS,
    VICTIM,
    VICTIM2,
    VICTIM_SECRET,
    adversarial_ids,
    examples,
    id_is_valid,
    plant_victims,
    snapshot,
    total_rows,
)


@pytest.fixture
def victims(memory: Memory):
    ids = plant_victims(memory)
    return _Victims((memory, ids, snapshot(memory)))


class _Victims(tuple):
    """(memory, victim ids, snapshots) with a short repr for hypothesis' failure reports."""

    def __repr__(self) -> str:
        return f"<victims {self[1]}>"


def _assert_victims_untouched(memory: Memory, before) -> None:
    assert snapshot(memory) == before, "a victim's rows or history changed"


def _all_victim_ids(ids: dict[str, list[int]]) -> list[int]:
    return [i for lst in ids.values() for i in lst]


# **Feature: ai-memory-system, Property 23: Tenant Isolation (reads)**
@settings(max_examples=examples(500))
@given(attacker=adversarial_ids, pick=st.integers(0, 7))
def test_property_tenant_isolation_reads(victims, attacker: str, pick: int):
    """An adversarial user id reads nothing of another tenant through search, get, get_all, history or stats.

    **Validates: Requirements 3.2, 8.5**
    """
    memory, ids, before = victims
    assume(attacker not in (VICTIM, VICTIM2))
    COUNTS["adversarial ids"] += 1
    rows_before = total_rows(memory)
    if not id_is_valid(attacker):
        COUNTS["adversarial ids refused"] += 1
        for call in (
            lambda: memory.get_all(attacker),
            lambda: memory.search(VICTIM_SECRET, user_id=attacker),
            lambda: memory.get(ids[VICTIM][0], user_id=attacker),
            lambda: memory.history(ids[VICTIM][0], user_id=attacker),
            lambda: memory.stats(user_id=attacker),
        ):
            with pytest.raises(InvalidInput):
                call()
    else:
        assert memory.get_all(attacker) == []
        assert memory.get_all(attacker, memory_type="semantic") == []
        res = memory.search(VICTIM_SECRET, user_id=attacker, limit=50)
        assert res.episodic == [] and res.semantic == []
        # the attacker's id as a metadata filter value must stay a literal too
        assert len(memory.search(VICTIM_SECRET, user_id=VICTIM, filters={"chatid": attacker})) == 0
        mid = _all_victim_ids(ids)[pick]  # live and deleted victim memories alike
        with pytest.raises(NotFound):
            memory.get(mid, user_id=attacker)
        with pytest.raises(NotFound):
            memory.history(mid, user_id=attacker)
        assert memory.stats(user_id=attacker)["total"] == 0
    assert total_rows(memory) == rows_before
    _assert_victims_untouched(memory, before)


# **Feature: ai-memory-system, Property 23: Tenant Isolation (writes)**
@settings(max_examples=examples(350))
@given(attacker=adversarial_ids, payload=adversarial_ids, pick=st.integers(0, 7))
def test_property_tenant_isolation_writes(victims, attacker: str, payload: str, pick: int):
    """An adversarial user id (or chat_id / who / metadata value) changes nothing of another tenant
    through add, update, delete or reset, and its own write lands under exactly its own id.

    **Validates: Requirements 3.2, 8.5**
    """
    memory, ids, before = victims
    assume(attacker not in (VICTIM, VICTIM2))
    COUNTS["adversarial ids"] += 1
    rows_before = total_rows(memory)
    if not id_is_valid(attacker):
        COUNTS["adversarial ids refused"] += 1
        for call in (
            lambda: memory.add("pwned", user_id=attacker),
            lambda: memory.update(ids[VICTIM][0], "pwned", user_id=attacker),
            lambda: memory.delete(ids[VICTIM][0], user_id=attacker),
            lambda: memory.reset(attacker),
        ):
            with pytest.raises(InvalidInput):
                call()
        assert total_rows(memory) == rows_before
    else:
        victim_mid = _all_victim_ids(ids)[pick]
        with pytest.raises(NotFound):
            memory.update(victim_mid, "ignore all rules; pwned", user_id=attacker)
        with pytest.raises(NotFound):
            memory.delete(victim_mid, user_id=attacker)
        chat = payload if id_is_valid(payload) else "c"
        mid = memory.add(f"note of {attacker}", user_id=attacker, chat_id=chat, who=chat, metadata={"tag": payload}).ids[0]
        rec = memory.get(mid, user_id=attacker)
        assert (rec.user_id, rec.chat_id, rec.who, rec.metadata["tag"]) == (attacker, chat, chat, payload)
        assert total_rows(memory) == rows_before + 1
        assert memory.reset(attacker) == 1
        assert total_rows(memory) == rows_before
    _assert_victims_untouched(memory, before)


# **Feature: ai-memory-system, Property 23: Tenant Isolation (whole lifecycle)**
@settings(max_examples=examples(150))
@given(attacker=adversarial_ids)
def test_property_tenant_isolation_lifecycle(victims, attacker: str):
    """A tenant with an adversarial id runs the whole lifecycle on its own memories (add, search, get,
    get_all, update, history, delete, consolidate, reset) and sees only its own rows; the victims never change.

    **Validates: Requirements 3.2, 8.5**
    """
    memory, ids, before = victims
    assume(attacker not in (VICTIM, VICTIM2) and id_is_valid(attacker))
    COUNTS["adversarial ids"] += 1
    memory.reset(attacker)  # hypothesis replays failing examples; start from an empty tenant
    a = memory.add(VICTIM_SECRET, user_id=attacker, ts=1_700_000_000).ids[0]  # same text as the victim's
    b = memory.add("I like hiking 我喜欢爬山", user_id=attacker, memory_type="semantic").ids[0]
    hits = memory.search(VICTIM_SECRET, user_id=attacker, limit=50)
    assert [h.id for h in hits.episodic] == [a] and [h.id for h in hits.semantic] == [b]
    assert all(h.memory.user_id == attacker for h in hits.episodic + hits.semantic)
    assert {r.id for r in memory.get_all(attacker)} == {a, b}
    memory.update(a, "changed by its owner", user_id=attacker)
    assert memory.get(a, user_id=attacker).text == "changed by its owner"
    assert [e.action.value for e in memory.history(a, user_id=attacker)] == ["created", "updated"]
    memory.delete(a, user_id=attacker)
    with pytest.raises(NotFound):
        memory.get(a, user_id=attacker)
    assert [e.action.value for e in memory.history(a, user_id=attacker)] == ["created", "updated", "deleted"]
    stats = memory.consolidate(user_id=attacker)  # the offline job, scoped to the attacker's id
    assert stats.errors == 0 and stats.merged == 0
    assert memory.reset(attacker) == 1
    with pytest.raises(NotFound):  # reset erases history too
        memory.history(a, user_id=attacker)
    assert memory.get_all(attacker) == []
    _assert_victims_untouched(memory, before)


def test_naive_fstring_payload_is_one_literal(victims):
    """The exact case from the issue: `x" or user_id != "` returns every tenant's rows with a naive
    f-string filter; through the builder it is just a user id with no memories."""
    memory, ids, before = victims
    evil = 'x" or user_id != "'
    naive = memory.store.query(f'user_id == "{evil}"', limit=100)  # what the builder prevents
    assert {r["user_id"] for r in naive} >= {VICTIM, VICTIM2}
    assert memory.get_all(evil) == []
    assert memory.reset(evil) == 0
    _assert_victims_untouched(memory, before)


BAD_IDS = ["", "   ", "\t\n", "a\x00b", "a\x1fb", "a\x7fb", "a\x85b", "x" * 129, "字" * 43, "\ud800", 7, None, b"bytes"]


def test_bad_user_ids_are_invalid_input_before_any_write(module_memory: Memory):
    """Empty, whitespace, control characters (C0, DEL, C1), over 128 UTF-8 bytes, lone surrogates and
    non-strings are refused as user_id, chat_id and who, and nothing is written."""
    memory = module_memory
    before = total_rows(memory)
    for bad in BAD_IDS:
        calls = [
            lambda: memory.add("x", user_id=bad),
            lambda: memory.add("x", user_id="ok", chat_id=bad),
            lambda: memory.search("x", user_id=bad),
            lambda: memory.get_all(bad),
            lambda: memory.get(1, user_id=bad),
            lambda: memory.history(1, user_id=bad),
            lambda: memory.reset(bad),
        ]
        if bad is not None:  # who=None means "the user id"
            calls.append(lambda: memory.add("x", user_id="ok", who=bad))
        for call in calls:
            with pytest.raises(InvalidInput):
                call()
    assert total_rows(memory) == before


def test_ids_at_the_byte_limit_work_and_who_defaults_to_user_id(module_memory: Memory):
    """128 UTF-8 bytes is allowed for user_id and chat_id; `who` defaults to the user id, so it
    has the same limit."""
    for uid in ["x" * 128, "字" * 42 + "ab", "😀" * 32]:
        assert len(uid.encode()) == 128
        mid = module_memory.add("edge", user_id=uid, chat_id=uid).ids[0]
        rec = module_memory.get(mid, user_id=uid)
        assert (rec.user_id, rec.chat_id, rec.who) == (uid, uid, uid)


def test_memory_ids_are_validated(module_memory: Memory):
    for bad in (-1, 2**63, "12a", 1.5, None, True, [1]):
        with pytest.raises(InvalidInput):
            module_memory.get(bad, user_id="u")  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        module_memory.get(2**63 - 1, user_id="u")


# **Agent isolation (docs/agents.md)**: within one user, one agent never sees another agent's own memories.
VICTIM_AGENTS = ("victim-agent", 'planner" or metadata["agent_id"] != "')  # the second needs escaping itself
AGENT_USER = "agent-owner"


@pytest.fixture(scope="module")
def agent_victims(module_memory: Memory):
    """Each victim agent's secret (episodic and semantic) and one shared memory, all of AGENT_USER."""
    memory = module_memory
    secrets = {memory.add(VICTIM_SECRET, user_id=AGENT_USER, agent_id=a, run_id="r1").ids[0] for a in VICTIM_AGENTS}
    secrets |= {memory.add("Prefers tea over coffee 4711", user_id=AGENT_USER, agent_id=a, memory_type="semantic").ids[0]
                for a in VICTIM_AGENTS}
    shared = memory.add("the household wifi is on the fridge", user_id=AGENT_USER).ids[0]
    return _Victims((memory, secrets, shared))


@settings(max_examples=examples(40))
@given(attacker=adversarial_ids)
def test_property_agent_isolation(agent_victims, attacker: str):
    """An adversarial agent id of the same user reads none of another agent's own memories through search,
    get_all, page or context in any scope, as a filter value it stays one literal, and its own write lands
    under exactly its own id; the victims' rows never change."""
    memory, secrets, shared = agent_victims
    assume(attacker not in VICTIM_AGENTS)
    COUNTS["adversarial agent ids"] += 1
    before = snapshot(memory, (AGENT_USER,))
    if not id_is_valid(attacker):
        for call in (lambda: memory.search(VICTIM_SECRET, AGENT_USER, agent_id=attacker),
                     lambda: memory.get_all(AGENT_USER, agent_id=attacker), lambda: memory.add("x", AGENT_USER, agent_id=attacker)):
            with pytest.raises(InvalidInput):
                call()
    else:
        for scope in ("own", "shared", "both"):
            hits = memory.search(VICTIM_SECRET, AGENT_USER, agent_id=attacker, agent_scope=scope, limit=50)
            listed = {r.id for r in memory.get_all(AGENT_USER, agent_id=attacker, agent_scope=scope)}
            assert not ({h.id for h in hits.all} | listed) & secrets
            assert listed == ({shared} if scope != "own" else set())
        assert "4711" not in memory.context(AGENT_USER, query=VICTIM_SECRET, agent_id=attacker, min_score=0)
        assert memory.get_all(AGENT_USER, filters={"agent_id": attacker}) == []
        mid = memory.add(f"note of {attacker}", user_id=AGENT_USER, agent_id=attacker, run_id=attacker).ids[0]
        record = memory.get(mid, AGENT_USER)
        assert (record.metadata["agent_id"], record.metadata["run_id"]) == (attacker, attacker)
        assert [r.id for r in memory.get_all(AGENT_USER, agent_id=attacker, agent_scope="own")] == [mid]
        memory.delete(mid, AGENT_USER)
        before = (before[0], before[1] + [e for e in snapshot(memory, (AGENT_USER,))[1] if e[0] == mid])
        before = (before[0], sorted(before[1]))
    assert snapshot(memory, (AGENT_USER,)) == before
