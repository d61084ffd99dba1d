"""An Agents SDK session conformance suite of our own, written from the SDK's documented `Session`
contract (get_items with a limit, add_items in order, pop_item, clear_session, session_settings, the
items persisted under the session id), run against HippocampusSession and against the SDK's own
SQLiteSession, so the suite itself is checked by the reference implementation. Then what only
Hippocampus adds: a restart of the Memory, the extraction state across objects, and a fact the
`remember` tool stored never extracted again at the end."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.memory import SessionSettings

from hippocampus import Memory
from hippocampus.integrations.openai_agents import HippocampusSession, memory_tools
from hippocampus.testing import DeterministicEmbedder
from tests.integrations.test_openai_agents import CannedModel, call, say

RUN = RunConfig(tracing_disabled=True)
ITEMS = [{"role": "user", "content": f"Message {i}"} for i in range(5)]
TOOL_TURN = [{"role": "user", "content": "What is the weather? ¿Qué tiempo hace? 天气"},
             {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "call_1", "output": "sunny; DROP TABLE x; --"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]}]


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    with Memory(milvus_uri=str(tmp_path_factory.mktemp("sc") / "m.db"), embedder=DeterministicEmbedder()) as m:
        yield m


@pytest.fixture(params=["hippocampus", "sqlite"])
def make(request, memory, tmp_path) -> Callable[..., Any]:
    """make(session_id, **settings): a session of the implementation under test; the same id, the same store."""
    opened: list[Any] = []

    def new(session_id: str, **kwargs: Any) -> Any:
        if request.param == "sqlite":
            session = SQLiteSession(session_id, tmp_path / "sessions.db", **kwargs)
            opened.append(session)
            return session
        return HippocampusSession(memory, "conformance", session_id, **kwargs)

    yield new
    for session in opened:
        session.close()


def run(coro):
    return asyncio.run(coro)


def sid() -> str:
    return uuid.uuid4().hex[:10]


def test_items_come_back_in_order_as_they_were_added(make):
    session = make(sid())
    run(session.add_items(ITEMS[:2]))
    run(session.add_items(TOOL_TURN))
    run(session.add_items([]))
    assert run(session.get_items()) == ITEMS[:2] + TOOL_TURN


def test_get_items_limit_is_the_newest_in_order(make):
    session = make(sid())
    run(session.add_items(ITEMS))
    assert run(session.get_items(limit=2)) == ITEMS[3:]
    assert run(session.get_items(limit=10)) == ITEMS
    assert run(session.get_items(limit=0)) == []


def test_pop_item_removes_the_newest_and_none_when_empty(make):
    session = make(sid())
    assert run(session.pop_item()) is None
    run(session.add_items(ITEMS[:3]))
    assert run(session.pop_item()) == ITEMS[2]
    assert run(session.get_items()) == ITEMS[:2]
    assert [run(session.pop_item()) for _ in range(3)] == [ITEMS[1], ITEMS[0], None]


def test_clear_session_empties_it_and_it_can_be_used_again(make):
    session = make(sid())
    run(session.add_items(ITEMS))
    run(session.clear_session())
    assert run(session.get_items()) == []
    run(session.add_items(ITEMS[:1]))
    assert run(session.get_items()) == ITEMS[:1]


def test_a_new_object_with_the_same_id_sees_the_items_and_another_id_does_not(make):
    session_id = sid()
    run(make(session_id).add_items(ITEMS[:3]))
    again, other = make(session_id), make(sid())
    assert run(again.get_items()) == ITEMS[:3] and run(other.get_items()) == []
    assert run(again.pop_item()) == ITEMS[2]
    assert run(make(session_id).get_items()) == ITEMS[:2]
    run(again.clear_session())
    assert run(make(session_id).get_items()) == []


def test_session_settings_in_the_constructor(make):
    assert make(sid()).session_settings == SessionSettings() and make(sid()).session_settings.limit is None
    session = make(sid(), session_settings=SessionSettings(limit=3))
    run(session.add_items(ITEMS))
    assert run(session.get_items()) == ITEMS[2:]  # the settings' limit is get_items' default
    assert run(session.get_items(limit=1)) == ITEMS[4:]  # an explicit limit wins
    loose = make(sid(), session_settings={"limit": 0})
    assert isinstance(loose.session_settings, SessionSettings) and loose.session_settings.limit == 0
    with pytest.raises(TypeError, match="limitt"):
        make(sid(), session_settings={"limitt": 1})


def test_runner_replays_the_history_and_honours_a_run_limit(make):
    session = make(sid())
    model = CannedModel([lambda items: [say("Reply 1")], lambda items: [say("Reply 2")], lambda items: [say("Reply 3")]])
    agent = Agent(name="test", model=model)
    run(Runner.run(agent, "Message 1", session=session, run_config=RUN))
    run(Runner.run(agent, "Message 2", session=session, run_config=RUN))
    assert [i.get("content") for i in model.inputs[1]][::2] == ["Message 1", "Message 2"] and len(model.inputs[1]) == 3
    limited = RunConfig(tracing_disabled=True, session_settings=SessionSettings(limit=1))
    run(Runner.run(agent, "Message 3", session=session, run_config=limited))
    assert len(model.inputs[2]) == 2 and model.inputs[2][-1]["content"] == "Message 3"
    assert len(run(session.get_items())) == 6


def test_one_session_written_from_threads_each_with_its_own_event_loop(make):
    """The SDK's concurrent-access contract: one session object, add_items from five threads, each
    running its own loop; every item is kept (an asyncio.Lock shared across loops hung here)."""
    session = make(sid())

    errors: list[BaseException] = []

    def add(item: dict[str, Any]) -> None:
        try:
            asyncio.run(session.add_items([item]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(item,), daemon=True) for item in ITEMS * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)  # a guard against a hang (daemon threads), not a measurement
    assert not any(t.is_alive() for t in threads), "add_items from threads with their own loops never finished"
    assert errors == []
    assert sorted(i["content"] for i in run(session.get_items())) == sorted(i["content"] for i in ITEMS * 2)


# ---------------------------------------------------------------------------- Hippocampus only


def test_the_items_survive_a_restart_of_the_memory(tmp_path):
    path = str(tmp_path / "restart.db")
    with Memory(milvus_uri=path, embedder=DeterministicEmbedder()) as memory:
        run(HippocampusSession(memory, "uma", "s-restart").add_items(TOOL_TURN + [{"role": "user", "content": "x" * 40000}]))
    with Memory(milvus_uri=path, embedder=DeterministicEmbedder()) as memory:
        back = HippocampusSession(memory, "uma", "s-restart")
        assert run(back.get_items()) == TOOL_TURN + [{"role": "user", "content": "x" * 40000}]  # a long item in parts
        assert run(HippocampusSession(memory, "vic", "s-restart").get_items()) == []  # the session is the user's
        assert memory.get_all("uma") == []  # the items are no memories of the user


def test_the_extraction_state_is_kept_with_the_items(memory):
    first = HippocampusSession(memory, "wes", "s-state", max_messages=2)
    run(first.add_items([{"role": "user", "content": "I play the oboe in an orchestra"}, say("Lovely.").model_dump()]))
    assert len(first.reports) == 1 and len(memory.get_all("wes")) == 1  # the full buffer was extracted
    second = HippocampusSession(memory, "wes", "s-state", max_messages=2)
    report = run(second.end())
    assert report.messages == 0 and len(memory.get_all("wes")) == 1  # not handed again by a new object
    assert run(HippocampusSession(memory, "wes", "s-state").end()).warnings == ["the session has ended already"]


def test_a_fact_the_remember_tool_stored_is_not_extracted_again(memory):
    user = "xia"
    model = CannedModel([lambda items: [call("remember", {"text": "Xia's dog is called Pepper"}, "c1")],
                         lambda items: [say("I'll remember Pepper.")]])
    session = HippocampusSession(memory, user, "s-tool")
    agent = Agent(name="assistant", model=model, tools=memory_tools(memory, user))
    run(Runner.run(agent, "My dog is called Pepper, a small terrier.", session=session, run_config=RUN))
    run(session.add_items([{"role": "user", "content": "I work as a nurse in Leeds"}, say("Noted.").model_dump()]))
    run(session.end())
    texts = sorted(r.text for r in memory.get_all(user))
    assert len([t for t in texts if "Pepper" in t]) == 1, texts  # the tool's, not the user's message again
    assert any("nurse" in t for t in texts), texts  # a turn without the tool is extracted


def test_the_adapters_reserved_users_are_not_listed_as_users(tmp_path):
    from hippocampus.integrations.langgraph import HippocampusStore
    from hippocampus.validation import reserved_user

    with Memory(milvus_uri=str(tmp_path / "reserved.db"), embedder=DeterministicEmbedder()) as memory:
        run(HippocampusSession(memory, "yan", "s-reserved").add_items(ITEMS[:2]))
        HippocampusStore(memory).put(("memories", "zoe"), "k", {"text": "Zoe rides a tandem"})
        memory.add("Yan collects stamps", user_id="yan")
        assert memory.user_ids() == ["yan", "zoe"]  # the people, not the adapters' bookkeeping
        hidden = sorted(set(memory.user_ids(reserved=True)) - {"yan", "zoe"})
        assert [reserved_user(u).split("'")[0] for u in hidden] == ["a LangGraph store", "an OpenAI Agents SDK session"]
        assert reserved_user("yan") is None
