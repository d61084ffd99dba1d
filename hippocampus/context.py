"""MemoryContext: what every service of the facade shares, handed to each by name.

The facade (memory/facade.py) opens one per `Memory`; a service's constructor takes it (and any
other service it calls), so what a service depends on is written in its signature, never reached
through `self` of a shared class."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .config import MemoryConfig
from .embeddings import Embedder
from .embeddings.crosslang import make_crosslang, resolve
from .embeddings.turns import FairLock
from .llm import ChatModel
from .observability.tracing import traced_embedder
from .retrieval import RetrievalParams, Retriever
from .store import MilvusStore
from .store.writes import Writer

P = TypeVar("P")


class MemoryContext:
    """The configuration, the store, the embedder, the lazily made chat model, the write lock shared
    with the consolidation job, the one writer and the retriever of one `Memory`."""

    def __init__(self, config: MemoryConfig, store: MilvusStore, embedder: Embedder, llm: ChatModel | None = None):
        self._config = config
        self.store = store
        self.embedder = embedder = traced_embedder(embedder, config)  # itself unless tracing is on (tracing.py)
        self._llm = llm
        self.write_lock = FairLock()  # granted in turns between tenants (embeddings/turns.py)
        self.writer = Writer(store, embedder, self.write_lock)
        self.retriever = Retriever(store, embedder, RetrievalParams.from_config(config))

    @property
    def config(self) -> MemoryConfig:
        """The settings every service reads."""
        return self._config

    @config.setter
    def config(self, config: MemoryConfig) -> None:
        """Replace the settings; what was made from them follows at once: the retriever's parameters (the
        same retriever, which the facade and the jobs hold). The project's categories are read from the
        config at each write (lifecycle/rows.new_row), so nothing else holds them."""
        self._config = config
        self.retriever.params = RetrievalParams.from_config(config)

    @classmethod
    def open(cls, config: MemoryConfig, embedder: Embedder, llm: ChatModel | None = None) -> MemoryContext:
        """Open (or create) the store that `config` names, for `embedder`.

        Raises StoreLockedError / SchemaMismatchError / StoreCorruptedError / StoreError as MilvusStore does."""
        store = MilvusStore(
            uri=config.milvus_uri,
            dim=embedder.dim,
            embedding_model=embedder.model_name,
            collection=config.collection_name,
            token=config.milvus_token.get_secret_value() if config.milvus_token else None,
            crosslang=make_crosslang(resolve(config.crosslang_embedder, embedder.model_name)),
        )
        return cls(config, store, embedder, llm)

    @property
    def llm(self) -> ChatModel:
        """The configured ChatModel, made on first use (the rules provider when offline).

        Raises ConfigError when the configured provider cannot be made (e.g. a missing API key)."""
        if self._llm is None:
            from .llm.factory import make_llm

            self._llm = make_llm(self.config)
        return self._llm

    @llm.setter
    def llm(self, model: ChatModel | None) -> None:
        self._llm = model

    @contextmanager
    def override(self, *, llm: ChatModel) -> Iterator[None]:
        """Use `llm` for the block, then put back what was there (even a not-yet-made configured model)."""
        previous, self._llm = self._llm, llm
        try:
            yield
        finally:
            self._llm = previous

    def processor(self, cls: type[P], *args: Any, **kwargs: Any) -> P:
        """A processor of class `cls` over this context's chat model, with the configured prompts."""
        from .processors.base import build

        return build(cls, self.llm, self.config, *args, **kwargs)  # type: ignore[type-var]
