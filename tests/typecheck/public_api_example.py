"""The public API as a user's code meets it, read by `mypy --strict` (tests/test_typing.py), never run: every
result is assigned to an annotated variable, so a face that lost its types (a method made at run time, an
`Any` where a model is returned) fails the check. Not collected by pytest (its name is not test_*)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import hippocampus
from hippocampus import (
    AddResult,
    AsyncClient,
    AsyncMemory,
    Client,
    HippocampusError,
    HistoryEvent,
    InvalidInput,
    Memory,
    MemoryPage,
    MemoryRecord,
    MemoryType,
    NotFound,
    SearchHit,
    SearchResult,
    ServiceUnavailable,
    UndoResult,
)
from hippocampus.integrations.langgraph import HippocampusStore
from hippocampus.integrations.openai_agents import HippocampusSession


def in_process(memory: Memory) -> None:
    added: AddResult = memory.add("I moved to Berlin in May", user_id="alice", memory_type=MemoryType.SEMANTIC)
    first: int = added.ids[0]
    found: SearchResult = memory.search("where does alice live?", user_id="alice", limit=3)
    hits: list[SearchHit] = found.episodic + found.semantic
    text: str = hits[0].memory.text
    record: MemoryRecord = memory.get(first, "alice")
    changed: MemoryRecord = memory.update(first, text + " (2024)", user_id="alice", metadata={"source": "chat"})
    events: list[HistoryEvent] = memory.history(changed.id, "alice")
    event: int | None = events[-1].event_id
    assert event is not None
    undone: UndoResult = memory.undo(event, "alice")
    page: MemoryPage = memory.page("alice", limit=10)
    records: Iterator[MemoryRecord] = memory.iter_all("alice")
    block: str = memory.context("alice", query="home")
    memory.delete(record.id, "alice")
    print(undone.memory_ids, page.next_offset, next(records, None), block)


def remote(url: str) -> None:
    client: Client = hippocampus.connect(url, start=False)
    with client as memory:
        found: SearchResult = memory.search("where does alice live?", "alice", graph=False)
        added: AddResult = memory.add([{"role": "user", "content": "I like tea"}], "alice", infer=True)
        records: list[MemoryRecord] = memory.get_all("alice", agent_id="planner")
        ids: list[int] = memory.add_many([{"messages": "a", "user_id": "alice"}])
        healthy: bool = memory.healthy()
        print(found, added, records, ids, healthy)
    try:
        Client(url, timeout=5.0).get(1, "alice")
    except NotFound as exc:
        error: HippocampusError = exc
        print(error)
    except (InvalidInput, ServiceUnavailable) as exc:
        print(exc)


async def remote_async(url: str) -> None:
    async with AsyncClient(url) as client:
        found: SearchResult = await client.search("tea?", "alice")
        record: MemoryRecord = await client.get(found.semantic[0].memory.id, "alice")
        records: AsyncIterator[MemoryRecord] = client.iter_all("alice")
        async for each in records:
            print(each.text, record.text)
        await client.aclose()


async def embedded_async() -> None:
    async with AsyncMemory(milvus_uri="./demo.db") as memory:
        added: AddResult = await memory.add("I moved to Berlin in May", user_id="alice")
        found: SearchResult = await memory.search("where?", "alice", mode="bm25")
        events: list[HistoryEvent] = await memory.history(added.ids[0], "alice")
        async for record in memory.iter_all("alice"):
            kept: MemoryRecord = record
            print(kept, found, events)
    opened: AsyncMemory = await AsyncMemory.open(milvus_uri="./demo.db")
    wrapped: AsyncMemory = AsyncMemory.wrap(Memory(milvus_uri="./demo.db"))
    await opened.aclose()
    await wrapped.close()


def adapters(memory: Memory) -> None:
    store = HippocampusStore(memory, user_id="alice")
    store.put(("memories",), "diet", {"text": "vegetarian"})
    item = store.get(("memories",), "diet")
    print(item.value if item is not None else None)
    session = HippocampusSession(memory, "alice", "chat-1")
    print(session.session_id, session.reports)
