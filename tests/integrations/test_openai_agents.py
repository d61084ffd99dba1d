"""HippocampusSession and memory_tools (issue 33) with the real openai-agents package: Runner.run
with a scripted model behind the SDK's own Model interface (no network) and a real Memory
(milvus-lite, the deterministic embedder, the offline extraction rules). Two sessions: what the
first was told, the second's agent recalls through the recall tool and forgets through forget."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, ModelResponse, RunConfig, Runner, Usage
from agents.memory import Session as SessionProtocol
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from hippocampus import Memory
from hippocampus.integrations.openai_agents import HippocampusSession, memory_tools, message_text
from hippocampus.integrations.tools import definitions
from hippocampus.testing import DeterministicEmbedder

RUN = RunConfig(tracing_disabled=True)


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def call(name: str, arguments: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=call_id, call_id=call_id, type="function_call", name=name,
                                    arguments=json.dumps(arguments))


def tool_outputs(items: list[Any]) -> list[str]:
    return [str(i["output"]) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


class CannedModel(Model):
    """The SDK's Model interface answering from a script: each step a function of the input items
    (so a step can read a tool's output, as a model does) returning the output items."""

    def __init__(self, steps: list[Callable[[list[Any]], list[Any]]]):
        self.steps, self.inputs, self.tools = list(steps), [], []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                           *, previous_response_id=None, conversation_id=None, prompt=None) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        self.tools.append(tools)
        if not self.steps:
            raise AssertionError("the model was asked more often than scripted")
        return ModelResponse(output=self.steps.pop(0)(items), usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("these tests do not stream")


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    with Memory(milvus_uri=str(tmp_path_factory.mktemp("oa") / "m.db"), embedder=DeterministicEmbedder()) as m:
        yield m


def test_the_session_follows_the_sdk_protocol(memory):
    session = HippocampusSession(memory, "pat", max_messages=4)
    assert isinstance(session, SessionProtocol)

    async def run():
        await session.add_items([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
        await session.add_items([{"type": "function_call_output", "call_id": "c", "output": "x"}])
        latest, everything = await session.get_items(limit=2), await session.get_items()
        popped = await session.pop_item()
        after = await session.get_items()
        await session.clear_session()
        return latest, everything, popped, after, await session.get_items(), await session.pop_item()

    latest, everything, popped, after, cleared, none = asyncio.run(run())
    assert [message_text(i) for i in latest] == [("assistant", "hi"), None] and len(everything) == 3
    assert popped["type"] == "function_call_output" and len(after) == 2 and cleared == [] and none is None


def test_a_popped_turn_is_never_extracted_and_a_full_buffer_extracts(memory):
    session = HippocampusSession(memory, "quinn", max_messages=4)

    async def run():
        await session.add_items([{"role": "user", "content": "My sister Ana lives in Porto"}])
        await session.add_items([{"role": "user", "content": "I was born on the moon"}])
        await session.pop_item()  # the SDK takes the turn back before it is handed over
        await session.add_items([{"role": "assistant", "content": "Porto, lovely."},
                                 {"role": "user", "content": "I play the cello on Sundays"}])
        assert session.reports == []  # 3 messages wait: below the limit
        await session.add_items([{"role": "assistant", "content": "Nice."}])  # the 4th: extracted now
        return session.reports

    reports = asyncio.run(run())
    assert len(reports) == 1 and reports[0].messages == 4
    texts = [r.text for r in memory.get_all("quinn")]
    assert any("Porto" in t for t in texts) and any("cello" in t for t in texts), texts
    assert not any("moon" in t for t in texts)


def test_two_sessions_the_second_agent_recalls_and_forgets_what_the_first_was_told(memory):
    user = "rosa"
    first_model = CannedModel([lambda items: [say("A beagle called Biscuit, lovely!")]])
    first = HippocampusSession(memory, user, session_id="s1")
    agent = Agent(name="assistant", instructions="Be kind.", model=first_model, tools=memory_tools(memory, user))
    result = asyncio.run(Runner.run(agent, "My dog is called Biscuit, he is a beagle.", session=first, run_config=RUN))
    assert result.final_output == "A beagle called Biscuit, lovely!"
    assert [message_text(i) for i in asyncio.run(first.get_items())] == [
        ("user", "My dog is called Biscuit, he is a beagle."), ("assistant", "A beagle called Biscuit, lovely!")]
    assert memory.get_all(user) == []  # working memory only, until the session ends
    report = asyncio.run(first.end())
    assert report.trigger == "end" and len(report.added) == 1 and not report.pending
    again = asyncio.run(first.end())
    same_id = HippocampusSession(memory, user, session_id="s1")
    asyncio.run(same_id.add_items(asyncio.run(first.get_items())))
    replay = asyncio.run(same_id.end())
    assert again.added == [] and replay.added == [] and len(memory.get_all(user)) == 1  # idempotent

    def answer_from_tool(items):
        [found] = tool_outputs(items)
        return [say(f"From memory: {found}")]

    def forget_what_was_found(items):
        ids = re.findall(r"\[id (\d+)\]", tool_outputs(items)[-1])
        return [call("forget", {"memory_id": int(ids[0])}, "c2")]

    second_model = CannedModel([lambda items: [call("recall", {"query": "dog name"}, "c1")], answer_from_tool,
                                lambda items: [call("recall", {"query": "Biscuit the dog"}, "c1")], forget_what_was_found,
                                lambda items: [say(tool_outputs(items)[-1])]])
    second = HippocampusSession(memory, user, session_id="s2")
    agent = Agent(name="assistant", instructions="Use recall.", model=second_model, tools=memory_tools(memory, user))
    result = asyncio.run(Runner.run(agent, "What is my dog called?", session=second, run_config=RUN))
    assert "Biscuit" in result.final_output and "<data>" in result.final_output  # the prompt block's format
    assert [t.name for t in second_model.tools[0]] == ["recall", "remember", "forget"]
    history = second_model.inputs[1]
    assert message_text(history[0]) == ("user", "What is my dog called?")  # the session's items replayed
    result = asyncio.run(Runner.run(agent, "Please forget my dog.", session=second, run_config=RUN))
    assert result.final_output.startswith("Forgot memory") and memory.get_all(user) == []
    assert any(message_text(i) == ("user", "What is my dog called?") for i in second_model.inputs[2])  # turn 1 replayed


def test_the_tools_are_the_shared_definitions_and_errors_reach_the_model(memory):
    tools = memory_tools(memory, "sam")
    assert [(t.name, t.params_json_schema) for t in tools] == [(d["name"], d["parameters"]) for d in definitions()]
    model = CannedModel([lambda items: [call("forget", {"memory_id": 999999}, "c1")],
                         lambda items: [say(tool_outputs(items)[0])]])
    agent = Agent(name="assistant", model=model, tools=tools)
    result = asyncio.run(Runner.run(agent, "forget something", run_config=RUN))
    assert result.final_output.startswith("error: ") and "999999" in result.final_output
