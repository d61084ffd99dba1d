"""Hippocampus for the OpenAI Agents SDK: a `Session` that remembers across sessions, and the
recall / remember / forget tools::

    session = HippocampusSession(memory, user_id="alice")
    agent = Agent(name="assistant", instructions="...", tools=memory_tools(memory, "alice"))
    await Runner.run(agent, "I moved to Lyon", session=session)
    await session.end()  # what the session told about alice goes into long-term memory

The session's items (the SDK's conversation history, replayed to the model each turn) are its
working memory, kept in this process. Its user and assistant messages go to a
`hippocampus.agent.Session` when `max_messages` of them are waiting (a size limit) and at `end()`,
which runs the session extraction into long-term memory: idempotent, so ending twice, or ending
a new session object with the same `session_id` over the same messages, never stores a memory
twice. Items not handed over yet can still be popped (`pop_item`, the SDK's undo of a turn).

The tools are the ones of `tools.py` (one definition, one dispatcher) as SDK `FunctionTool`s, so
the model sees the same schema in every framework. Heavy: imports agents (extra `[openai-agents]`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import FunctionTool, RunContextWrapper
from agents.memory import SessionSettings

from ..agent import Session as AgentSession, SessionReport
from . import tools as T

__all__ = ["HippocampusSession", "memory_tools", "message_text"]


def message_text(item: Any) -> tuple[str, str] | None:
    """(role, text) of a user or assistant message item (EasyInputMessage or an output message);
    None for tool calls, tool outputs, reasoning and other items."""
    if not isinstance(item, dict):
        item = getattr(item, "model_dump", lambda **_: {})(exclude_unset=True)
    role = item.get("role")
    if role not in ("user", "assistant") or item.get("type", "message") != "message":
        return None
    content = item.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(part.get("text", "") for part in content
                         if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"))
    else:
        return None
    return (role, text) if text.strip() else None


class HippocampusSession:
    """An Agents SDK session (the `Session` protocol: get_items, add_items, pop_item,
    clear_session) for `user_id`, whose end extracts what it told into long-term memory.

    `max_messages` (2 .. 1000): messages waiting before an extraction runs mid-session. `llm`: the
    model the extraction asks (default: the memory's; the offline rules when it has none)."""

    session_settings: SessionSettings | None = None

    def __init__(self, memory: Any, user_id: str, session_id: str | None = None, *, chat_id: str = "default",
                 max_messages: int = 30, llm: Any = None) -> None:
        self._agent = AgentSession(memory, user_id, chat_id, max_messages=max_messages, session_id=session_id, llm=llm)
        self.session_id: str = self._agent.session_id
        self.user_id = self._agent.user_id
        self.max_messages = max_messages
        self._items: list[Any] = []
        self._handed = 0  # items[:_handed] have gone to the agent session
        self._lock = asyncio.Lock()

    @property
    def reports(self) -> list[SessionReport]:
        """What each extraction did (hippocampus.agent.SessionReport), oldest first."""
        return list(self._agent.reports)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The working memory, oldest first; the latest `limit` items when given."""
        async with self._lock:
            items = list(self._items)
        return items if limit is None else (items[-limit:] if limit > 0 else [])

    async def add_items(self, items: list[Any]) -> None:
        """Append items; when `max_messages` messages wait, they are extracted (in a worker thread)."""
        async with self._lock:
            self._items.extend(items)
            waiting = [m for m in map(message_text, self._items[self._handed:]) if m is not None]
            if len(waiting) >= self.max_messages:
                await asyncio.to_thread(self._hand_over, "save")

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item; one already handed to an extraction stays extracted."""
        async with self._lock:
            if not self._items:
                return None
            item = self._items.pop()
            self._handed = min(self._handed, len(self._items))
            return item

    async def clear_session(self) -> None:
        """Forget the conversation's items; what they told is extracted first (clearing the history
        is not a request to forget the user)."""
        async with self._lock:
            await asyncio.to_thread(self._hand_over, "save")
            self._items.clear()
            self._handed = 0

    async def end(self) -> SessionReport:
        """Extract what is waiting and close the session (idempotent: a second end does nothing)."""
        async with self._lock:
            return await asyncio.to_thread(self._hand_over, "end")

    def end_sync(self) -> SessionReport:
        """`end` for synchronous code (not from inside a running event loop)."""
        return self._hand_over("end")

    async def __aenter__(self) -> "HippocampusSession":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.end()

    def _hand_over(self, trigger: str) -> SessionReport:
        if self._agent.closed:
            return self._agent.end()  # "the session has ended already"
        last: SessionReport | None = None
        for item in self._items[self._handed:]:
            message = message_text(item)
            if message is not None:
                last = self._agent.add_message(*message)  # a report when its buffer filled and was extracted
        self._handed = len(self._items)
        if trigger == "end":
            return self._agent.end()
        return last if last is not None else self._agent.save()


def memory_tools(memory: Any, user_id: str, *, chat_id: str = "default", limit: int = T.RECALL_LIMIT) -> list[FunctionTool]:
    """recall, remember and forget for `user_id`, as SDK FunctionTools over tools.py's definitions
    and dispatcher (errors come back to the model as "error: ..." lines)."""

    def invoker(name: str) -> Any:
        async def on_invoke(_ctx: RunContextWrapper[Any], arguments: str) -> str:
            return await asyncio.to_thread(T.dispatch, memory, name, arguments, user_id=user_id, chat_id=chat_id,
                                           limit=limit)
        return on_invoke

    return [FunctionTool(name=d["name"], description=d["description"], params_json_schema=d["parameters"],
                         on_invoke_tool=invoker(d["name"]), strict_json_schema=True) for d in T.definitions()]
