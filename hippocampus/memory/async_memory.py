"""`AsyncMemory`: `Memory` for asyncio agents that embed the store, every verb a coroutine.

The methods are not written out: each is built from the one list of verbs (hippocampus/contract/verbs.py),
with Memory's own signature, docstring, models and exceptions, and runs the blocking Memory method
in a worker thread (anyio.to_thread), so the event loop never waits on the store, the embedder or a
model. Concurrent awaits on one AsyncMemory are safe: the store serialises its calls itself and every
write goes through the context's write lock (context.py), as a threaded service's do. A cancelled
await lets its thread finish the verb (a write is never cut in half) and then raises CancelledError.

    async with AsyncMemory(milvus_uri="./demo.db") as memory:
        await memory.add("I moved to Berlin in May", user_id="alice")
        hits = await memory.search("where does alice live?", user_id="alice")
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread

from ..config import MemoryConfig
from ..contract.verbs import VERBS, Verb
from ..embeddings import Embedder
from ..llm import ChatModel
from .facade import Memory

_CHUNK = 256  # records an async iterator fetches per trip to a worker thread


class AsyncMemory:
    """Memory's verbs as coroutines over one in-process store (see the module docstring).

    `AsyncMemory(...)` takes Memory's arguments and opens the store; `AsyncMemory.wrap(memory)` serves
    an open Memory (closing the AsyncMemory then closes it too)."""

    def __init__(self, config: MemoryConfig | None = None, *, embedder: Embedder | None = None,
                 llm: ChatModel | None = None, **overrides: Any):
        """Open the store as `Memory(config, embedder=..., llm=..., **overrides)` does, with the same
        errors (ConfigError, StoreLockedError, ...). Opening blocks briefly: `await AsyncMemory.open(...)`
        does it in a worker thread."""
        self.memory = Memory(config, embedder=embedder, llm=llm, **overrides)

    @classmethod
    def wrap(cls, memory: Memory) -> AsyncMemory:
        """An AsyncMemory over an open `memory` (the same store, lock and settings)."""
        out = cls.__new__(cls)
        out.memory = memory
        return out

    @classmethod
    async def open(cls, config: MemoryConfig | None = None, *, embedder: Embedder | None = None,
                   llm: ChatModel | None = None, **overrides: Any) -> AsyncMemory:
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

    aclose = close  # the name AsyncClient uses

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncMemory({self.memory.config.milvus_uri!r})"


def _coroutine(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of Memory as a coroutine that runs it in a worker thread."""

    @functools.wraps(method)  # name, docstring and (through __wrapped__) Memory's signature
    async def verb(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(functools.partial(method, self.memory, *args, **kwargs))

    return verb


def _async_iterator(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of Memory, which returns an iterator, as an async iterator: the records are fetched in
    worker threads, _CHUNK at a time."""

    @functools.wraps(method)
    async def verb(self: AsyncMemory, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        iterator = await anyio.to_thread.run_sync(lambda: iter(method(self.memory, *args, **kwargs)))
        while True:
            chunk = await anyio.to_thread.run_sync(lambda: [x for _, x in zip(range(_CHUNK), iterator)])
            for item in chunk:
                yield item
            if len(chunk) < _CHUNK:
                return

    return verb


def _install(verb: Verb) -> str | None:
    """Put `verb` on AsyncMemory under its async_memory name (verbs.py), unless that face omits it."""
    name = verb.face("async_memory").name
    if name is None:
        return None
    method = getattr(Memory, verb.name)
    returns = str(inspect.signature(method).return_annotation)
    build = _async_iterator if returns.startswith("Iterator") else _coroutine
    setattr(AsyncMemory, name, build(method))
    return name


VERB_NAMES: tuple[str, ...] = tuple(n for n in map(_install, VERBS) if n)
