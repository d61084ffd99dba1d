"""AsyncMemory: Memory's verbs as coroutines over one real store, safe under concurrent awaits;
the same models and exceptions; an async iterator for iter_all; an async context manager."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from hippocampus import AsyncMemory, InvalidInput, Memory, NotFound
from hippocampus.models import AddResult, HistoryAction, SearchResult
from hippocampus.testing import DeterministicEmbedder


def open_async(shared_db: Path, embedder: Any) -> AsyncMemory:
    return AsyncMemory(milvus_uri=str(shared_db), collection_name=f"am_{uuid.uuid4().hex[:10]}", embedder=embedder)


def test_fifty_concurrent_adds_and_searches_store_every_memory_once(shared_db: Path):
    """The hashing embedder: what is under test is the store and its locks, not the model's CPU time."""
    texts = [f"note {n}: the {word} is in drawer {n}" for n, word in enumerate(["key", "pen", "map", "coin", "ring"] * 10)]

    async def run() -> tuple[list[Any], list[Any], list[Any]]:
        async with open_async(shared_db, DeterministicEmbedder(64)) as memory:
            calls = [memory.add(t, user_id="ana", chat_id=f"c{n % 3}") for n, t in enumerate(texts)]
            calls += [memory.search(f"where is the {w}?", user_id="ana") for w in ["key", "pen", "map", "coin", "ring"] * 10]
            done = await asyncio.gather(*calls)
            return done, await memory.get_all("ana"), [r async for r in memory.iter_all("ana")]

    done, stored, iterated = asyncio.run(run())
    added, searched = done[:50], done[50:]
    assert all(isinstance(r, AddResult) and r.stored and len(r.ids) == 1 for r in added)
    assert all(isinstance(r, SearchResult) and {h.memory.text for h in r.all} <= set(texts) for r in searched)
    ids = [r.ids[0] for r in added]
    assert len(set(ids)) == 50 and sorted(r.id for r in stored) == sorted(ids)  # every memory stored once, under its own id
    assert sorted(r.text for r in stored) == sorted(texts) and sorted(r.id for r in iterated) == sorted(ids)


def test_same_models_exceptions_and_history_as_memory_and_close_releases_the_store(shared_db: Path, embedder: Any):
    async def run() -> None:
        memory = await AsyncMemory.open(milvus_uri=str(shared_db), collection_name=f"am_{uuid.uuid4().hex[:10]}", embedder=embedder)
        (mid,) = (await memory.add("I moved to Berlin", user_id="bo")).ids
        concurrent = await asyncio.gather(memory.update(mid, "I moved to Hamburg", user_id="bo"), memory.stats("bo"),
                                          memory.update_many([{"memory_id": mid, "text": "I moved to Hamburg"}], "bo"))
        assert concurrent[1]["total"] == 1 and concurrent[2].results[0].status in ("ok", "unchanged")
        assert (await memory.get(mid, user_id="bo")).text == "I moved to Hamburg"
        assert [e.action for e in await memory.history(mid, "bo")][:2] == [HistoryAction.CREATED, HistoryAction.UPDATED]
        with pytest.raises(NotFound, match="not found for this user"):
            await memory.get(mid, "someone-else")
        with pytest.raises(InvalidInput):
            await memory.search("", user_id="bo")
        with pytest.raises(TypeError):  # Memory's signature, checked before any thread runs
            await memory.get(mid)  # type: ignore[call-arg]
        assert memory.config.milvus_uri == str(shared_db) and memory.score_now  # properties and pure verbs too
        assert (await memory.delete_many([mid], "bo")).deleted == [mid]
        await memory.close()
        await memory.close()  # twice is harmless, as Memory.close

    asyncio.run(run())


def test_wrap_shares_an_open_memory(memory: Memory):
    (mid,) = memory.add("the spare key is under the mat", user_id="cy").ids

    async def run() -> Any:
        wrapped = AsyncMemory.wrap(memory)
        return await wrapped.get(mid, "cy"), await wrapped.context("cy")

    record, block = asyncio.run(run())
    assert record.text == "the spare key is under the mat" and "under the mat" in block
