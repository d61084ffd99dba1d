"""A Client on the service and an in-process Memory, given the same random sequence of operations,
give the same answers: the same records, hits, pages, history and statistics, and the same error
classes for the same bad input (hypothesis state machine; the two stores are separate collections)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule, run_state_machine_as_test

from hippocampus import Client, HippocampusError, Memory, MemoryRecord
from hippocampus.server import create_app
from tests.service_support import IN_PROCESS_URL, in_process

USERS = ["ann", "ben", "陈"]
TEXTS = ["I moved to Berlin in May", "我对花生过敏", "Ben plays the cello on Sundays", "明天下午三点开会",
         "My sister lives in Lyon", "I moved to Berlin in May"]  # a repeated text: ties must agree too
QUERIES = ["where did I move?", "过敏", "music", "meeting tomorrow", "family"]
EXCHANGES = ["user: I adopted a cat named Miso\nassistant: Lovely!", "user: forget what I said about Berlin\nassistant: Done.",
             "user: where did I move?\nassistant: You moved to Berlin in May.", "user: 谢谢\nassistant: 不客气"]
BAD = st.sampled_from(["", "   ", None, 5, "x" * 70_000])


def _norm(record: MemoryRecord) -> tuple:
    meta = {k: v for k, v in record.metadata.items() if k not in ("created_at", "updated_at")}
    if isinstance(meta.get("life"), dict):  # times of writing differ between the two stores, like created_at
        meta["life"] = {k: v for k, v in meta["life"].items() if k not in ("last_activated", "uses_day")}
    return (record.user_id, record.memory_type.value, record.ts, record.chat_id, record.who, record.text, record.hit_count,
            sorted((k, repr(v)) for k, v in meta.items()))


def _same(local: Callable[[], Any], remote: Callable[[], Any], norm: Callable[[Any], Any] = lambda x: x) -> Any:
    """Both calls give equal results, or both raise the same library error class."""
    try:
        a = local()
    except HippocampusError as exc:
        with pytest.raises(type(exc)):
            remote()
        return None
    b = remote()
    assert norm(a) == norm(b)
    return a, b


class Twins(RuleBasedStateMachine):
    memory: Memory
    client: Client
    pairs = Bundle("pairs")  # (local id, remote id) of the same memory

    def __init__(self) -> None:
        super().__init__()
        for user in USERS:
            self.memory.reset(user)
            self.client.reset(user)

    @rule(target=pairs, text=st.sampled_from(TEXTS), user=st.sampled_from(USERS), semantic=st.booleans(),
          ts=st.integers(0, 2_000_000_000))
    def add(self, text: str, user: str, semantic: bool, ts: int) -> tuple[int, int]:
        kind = "semantic" if semantic else "episodic"
        a = self.memory.add(text, user_id=user, ts=ts, memory_type=kind, metadata={"n": ts % 7})
        b = self.client.add(text, user_id=user, ts=ts, memory_type=kind, metadata={"n": ts % 7})
        assert (a.stored, a.reason, len(a.ids)) == (b.stored, b.reason, len(b.ids))
        return a.ids[0], b.ids[0]

    @rule(bad=BAD, user=st.sampled_from(USERS + ["", " "]))
    def add_bad(self, bad: Any, user: str) -> None:
        _same(lambda: self.memory.add(bad, user_id=user), lambda: self.client.add(bad, user_id=user))

    @rule(pair=pairs)
    def get(self, pair: tuple[int, int]) -> None:
        for user in USERS:
            _same(lambda: self.memory.get(pair[0], user), lambda: self.client.get(pair[1], user), _norm)

    @rule(pair=pairs, text=st.sampled_from(TEXTS + [""]))
    def update(self, pair: tuple[int, int], text: str) -> None:
        owner = self._owner(pair)
        if owner:
            _same(lambda: self.memory.update(pair[0], text, user_id=owner), lambda: self.client.update(pair[1], text, user_id=owner), _norm)

    @rule(pair=consumes(pairs))
    def delete(self, pair: tuple[int, int]) -> None:
        owner = self._owner(pair) or USERS[0]
        _same(lambda: self.memory.delete(pair[0], owner), lambda: self.client.delete(pair[1], owner))

    @rule(pair=pairs)
    def history_and_use(self, pair: tuple[int, int]) -> None:
        owner = self._owner(pair) or USERS[0]
        _same(lambda: self.memory.mark_used([pair[0]], owner), lambda: self.client.mark_used([pair[1]], owner),
              lambda rs: [_norm(r) for r in rs])
        _same(lambda: self.memory.history(pair[0], owner), lambda: self.client.history(pair[1], owner),
              lambda es: [(e.action, e.old_text, e.new_text, e.actor) for e in es])

    @rule(pair=pairs, exchange=st.sampled_from(EXCHANGES))
    def observe(self, pair: tuple[int, int], exchange: str) -> None:
        owner = self._owner(pair) or USERS[0]
        _same(lambda: self.memory.observe(exchange, owner, shown=[pair[0]]),
              lambda: self.client.observe(exchange, owner, shown=[pair[1]]),
              lambda r: (len(r.added), len(r.updated), len(r.boosted), len(r.used), len(r.deleted), len(r.refused),
                         r.llm_calls, r.reason))

    @rule(query=st.sampled_from(QUERIES), user=st.sampled_from(USERS), limit=st.sampled_from([None, 1, 3, 0, -1]),
          mode=st.sampled_from([None, "dense", "bm25", "hybrid", "nonsense"]))
    def search(self, query: str, user: str, limit: Any, mode: Any) -> None:
        def hits(result: Any) -> list:
            return [sorted((round(h.score, 4), h.memory.text) for h in hs) for hs in (result.episodic, result.semantic)]

        _same(lambda: self.memory.search(query, user, limit=limit, mode=mode),
              lambda: self.client.search(query, user, limit=limit, mode=mode), hits)

    @rule(user=st.sampled_from(USERS), offset=st.integers(-1, 4), limit=st.integers(0, 3))
    def page(self, user: str, offset: int, limit: int) -> None:
        def rows(page: Any) -> tuple:  # equal ts ties may list in either id order: compare as multisets per page
            return page.total, page.next_offset, sorted(_norm(r) for r in page.items)

        _same(lambda: self.memory.page(user, offset=offset, limit=limit), lambda: self.client.page(user, offset=offset, limit=limit), rows)

    @rule(user=st.sampled_from(USERS))
    def reset_one(self, user: str) -> None:
        _same(lambda: self.memory.reset(user), lambda: self.client.reset(user))

    @invariant()
    def same_counts(self) -> None:
        for user in USERS:
            a, b = self.memory.stats(user), self.client.stats(user)
            assert (a["total"], a["episodic"], a["semantic"]) == (b["total"], b["episodic"], b["semantic"])

    def _owner(self, pair: tuple[int, int]) -> str | None:
        for user in USERS:
            try:
                return self.memory.get(pair[0], user).user_id
            except HippocampusError:
                continue
        return None


def test_client_and_memory_agree(shared_db, embedder):
    local = Memory(milvus_uri=str(shared_db), collection_name=f"eq_a_{uuid.uuid4().hex[:8]}", embedder=embedder)
    served_memory = Memory(milvus_uri=str(shared_db), collection_name=f"eq_b_{uuid.uuid4().hex[:8]}", embedder=embedder)
    with in_process(create_app(served_memory, mcp=False)) as transport, Client(IN_PROCESS_URL, transport=transport) as client:
        Twins.memory, Twins.client = local, client
        run_state_machine_as_test(Twins, settings=settings(max_examples=12, stateful_step_count=15, deadline=None))
    local.close()
