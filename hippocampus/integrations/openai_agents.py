"""Hippocampus for the OpenAI Agents SDK: a `Session` that remembers across sessions, and the
recall / remember / forget tools::

    session = HippocampusSession(memory, user_id="alice")
    agent = Agent(name="assistant", instructions="...", tools=memory_tools(memory, "alice"))
    await Runner.run(agent, "I moved to Lyon", session=session)
    await session.end()  # what the session told about alice goes into long-term memory

The session's items (the SDK's conversation history, replayed to the model each turn) are its
working memory, persisted in the store under the session's id (session_items.py), so a new session
object, another process or a restart with the same `session_id` sees them. Its user and assistant messages go to a
`hippocampus.agent.Session` when `max_messages` of them are waiting (a size limit) and at `end()`,
which runs the session extraction into long-term memory: idempotent, so ending twice, or ending
a new session object with the same `session_id` over the same messages, never stores a memory
twice. Items not handed over yet can still be popped (`pop_item`, the SDK's undo of a turn).

The tools are the ones of `tools.py` (one definition, one dispatcher) as SDK `FunctionTool`s, so
the model sees the same schema in every framework. Heavy: imports agents (extra `[openai-agents]`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from agents import FunctionTool, RunContextWrapper
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from ..agent import Session as AgentSession
from ..agent import SessionReport
from . import tools as T
from .session_items import SessionItems

__all__ = ["HippocampusSession", "memory_tools", "message_text"]

T_ = TypeVar("T_")


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
    clear_session) for `user_id`, whose items persist in the store under `session_id` and whose end
    extracts what it told into long-term memory.

    `session_settings`: the SDK's SessionSettings (or a dict); its `limit` is get_items' default.
    `max_messages` (2 .. 1000): messages waiting before an extraction runs mid-session. `llm`: the
    model the extraction asks (default: the memory's; the offline rules when it has none)."""

    session_settings: SessionSettings | None = None

    def __init__(self, memory: Any, user_id: str, session_id: str | None = None, *, chat_id: str = "default",
                 max_messages: int = 30, llm: Any = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None) -> None:
        self._agent = AgentSession(memory, user_id, chat_id, max_messages=max_messages, session_id=session_id, llm=llm)
        self.session_settings = coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        self.session_id: str = self._agent.session_id
        self.user_id = self._agent.user_id
        self.max_messages = max_messages
        self._items = SessionItems(memory, self.user_id, self.session_id)
        self._handed: int | None = None  # items[:_handed] have gone to extraction (read from the store when first needed)
        self._lock = threading.RLock()  # held in the worker thread: callers may run on different event loops

    @property
    def reports(self) -> list[SessionReport]:
        """What each extraction did (hippocampus.agent.SessionReport), oldest first."""
        return list(self._agent.reports)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation's items, oldest first; the latest `limit` (or session_settings.limit) when given."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is None:
            return await self._locked(self._items.load)
        return await self._locked(self._items.latest, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Append items in order (persisted); when `max_messages` messages wait, they are extracted."""
        await self._locked(self._add, list(items))

    def _add(self, items: list[Any]) -> None:
        self._items.append(items)
        everything = self._items.load()
        waiting = [m for m in map(message_text, everything[self._watermark():]) if m is not None]
        if len(waiting) >= self.max_messages:
            self._hand_over("save", everything)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item; one already handed to an extraction stays extracted."""
        return await self._locked(self._pop)

    def _pop(self) -> Any | None:
        item = self._items.pop()
        if item is not None:
            self._handed = min(self._watermark(), self._items.count())
        return item

    async def clear_session(self) -> None:
        """Erase the conversation's items; what they told is extracted first (clearing the history
        is not a request to forget the user)."""
        await self._locked(self._clear)

    def _clear(self) -> None:
        self._hand_over("save")
        ended = self._items.state()["ended"]
        self._items.clear()
        self._handed = 0
        if ended:
            self._items.save_state(0, True)

    async def end(self) -> SessionReport:
        """Extract what is waiting and close the session (idempotent: a second end does nothing)."""
        return await self._locked(self._hand_over, "end")

    def end_sync(self) -> SessionReport:
        """`end` for synchronous code (not from inside a running event loop)."""
        with self._lock:
            return self._hand_over("end")

    async def _locked(self, fn: Callable[..., T_], *args: Any) -> T_:
        """`fn(*args)` in a worker thread under the session's lock: a thread lock, not an asyncio one,
        so callers on different event loops (the SDK's threads, each with its own loop) are ordered too."""

        def call() -> T_:
            with self._lock:
                return fn(*args)

        return await asyncio.to_thread(call)

    async def __aenter__(self) -> HippocampusSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.end()

    def _watermark(self) -> int:
        if self._handed is None:
            self._handed = self._items.state()["handed"]
        return self._handed

    def _hand_over(self, trigger: str, everything: list[Any] | None = None) -> SessionReport:
        """Hand the items not extracted yet to the agent session, then save or end it. Mid-session
        a trailing user message stays back (its turn's tool calls are not stored yet); a user message whose turn
        called the `remember` tool is not extracted (the model stored what it chose from it). Only a
        completed extraction is recorded in the store, so a restart retries what failed."""
        if self._items.state()["ended"]:
            self._agent.closed = True
        if self._agent.closed:
            return self._agent.end()  # "the session has ended already"
        everything = self._items.load() if everything is None else everything
        stop = len(everything)
        while trigger != "end" and stop > self._watermark() and (message_text(everything[stop - 1]) or ("",))[0] == "user":
            stop -= 1  # a turn not answered yet: its tool calls are not stored yet
        stored_by_tool = _remembered_turns(everything)
        last: SessionReport | None = None
        for index in range(self._watermark(), stop):
            message = message_text(everything[index])
            if message is not None and index not in stored_by_tool:
                last = self._agent.add_message(*message)  # a report when its buffer filled and was extracted
        self._handed = stop
        report = self._agent.end() if trigger == "end" else (last if last is not None else self._agent.save())
        if not report.pending:
            self._items.save_state(stop, self._agent.closed)
        return report


def _remembered_turns(items: list[Any]) -> set[int]:
    """Indexes of the user messages whose turn (up to the next user message) called `remember`."""
    out: set[int] = set()
    turn: list[int] = []
    for index, item in enumerate(items):
        message = message_text(item)
        if message is not None and message[0] == "user":
            if turn and turn[-1] != index - 1:
                turn = []  # a new turn: the previous user message had replies
            turn.append(index)
            continue
        data = item if isinstance(item, dict) else getattr(item, "model_dump", lambda **_: {})(exclude_unset=True)
        if data.get("type") == "function_call" and data.get("name") == "remember":
            out.update(turn)
    return out


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
