"""What `AsyncMemory` (async_memory.py, generated from the verb list) stands on: opening and closing the
Memory it serves, off the event loop, and an iterator's records fetched in worker threads. The verbs are
written out in async_memory.py by `python scripts/verbs.py --write`."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import anyio.to_thread

from ..config import MemoryConfig
from ..embeddings import Embedder
from ..llm import ChatModel
from .facade import Memory

_CHUNK = 256  # records an async iterator fetches per trip to a worker thread
T = TypeVar("T")
Self = TypeVar("Self", bound="AsyncMemoryBase")


class AsyncMemoryBase:
    """The Memory an AsyncMemory serves, opened and closed in worker threads."""

    memory: Memory

    def __init__(self, config: MemoryConfig | None = None, *, embedder: Embedder | None = None,
                 llm: ChatModel | None = None, **overrides: Any) -> None:
        """Open the store as `Memory(config, embedder=..., llm=..., **overrides)` does, with the same
        errors (ConfigError, StoreLockedError, ...). Opening blocks briefly: `await AsyncMemory.open(...)`
        does it in a worker thread."""
        self.memory = Memory(config, embedder=embedder, llm=llm, **overrides)

    @classmethod
    def wrap(cls: type[Self], memory: Memory) -> Self:
        """An AsyncMemory over an open `memory` (the same store, lock and settings)."""
        out = cls.__new__(cls)
        out.memory = memory
        return out

    @classmethod
    async def open(cls: type[Self], config: MemoryConfig | None = None, *, embedder: Embedder | None = None,
                   llm: ChatModel | None = None, **overrides: Any) -> Self:
        """`AsyncMemory(...)`, with the store opened in a worker thread."""
        memory = await anyio.to_thread.run_sync(functools.partial(Memory, config, embedder=embedder, llm=llm, **overrides))
        return cls.wrap(memory)

    @property
    def config(self) -> MemoryConfig:
        """The settings, Memory.config's."""
        return self.memory.config

    @property
    def llm(self) -> ChatModel:
        """The chat model, Memory.llm's."""
        return self.memory.llm

    async def close(self) -> None:
        """Release the store (in a worker thread). Raises nothing; closing twice is harmless."""
        await anyio.to_thread.run_sync(self.memory.close)

    async def aclose(self) -> None:
        """`close`, under the name AsyncClient uses."""
        await self.close()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncMemory({self.memory.config.milvus_uri!r})"


async def in_chunks(make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The records of the iterator `make()` returns, made and read in worker threads, _CHUNK at a time."""
    iterator = await anyio.to_thread.run_sync(lambda: iter(make()))
    while True:
        chunk = await anyio.to_thread.run_sync(lambda: [x for _, x in zip(range(_CHUNK), iterator)])
        for item in chunk:
            yield item
        if len(chunk) < _CHUNK:
            return
