"""The facade's services beyond RecordService, each made on first use.

Their modules (the processors, consolidation, compression, the graph, transfer...) are a large share of a
CLI command's import time, and `list`, `get` and `search` need only RecordService (docs/performance.md,
"Command line"). So each is a `made_on_first_use` attribute of `Memory`: the factory below imports its
module when a verb first needs it, and one instance is made however many threads ask at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

if TYPE_CHECKING:  # the types of what the factories make; each module is imported when its service is first made
    from ..consolidation.service import ConsolidationService
    from ..context import MemoryContext
    from ..graph.service import GraphService
    from ..lifecycle.service import LifecycleService
    from ..transfer.service import TransferService
    from .batch import BatchService
    from .browse import BrowseService
    from .observe import ChatHookService
    from .records import RecordService
    from .undo import UndoService

S = TypeVar("S")
_MAKING = threading.RLock()  # a factory may ask for another service (consolidation asks for lifecycle)


class Facade(Protocol):
    """What a factory reads of the facade it makes a service for (memory/facade.py `Memory`): the context and
    the services it hands on by name. Named here, so that this module need not import the facade that uses it."""

    ctx: MemoryContext

    @property
    def _records(self) -> RecordService: ...
    @property
    def _lifecycle(self) -> LifecycleService: ...
    @property
    def _graph(self) -> GraphService: ...


class made_on_first_use(Generic[S]):  # noqa: N801 - used as a decorator-like attribute, as functools.cached_property
    """A per-instance service: `make(memory)` the first time the attribute is read, then the instance's own."""

    def __init__(self, make: Callable[[Facade], S]):
        self.make = make

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, memory: None, owner: type) -> made_on_first_use[S]: ...
    @overload
    def __get__(self, memory: Facade, owner: type) -> S: ...
    def __get__(self, memory: Any, owner: type) -> Any:
        if memory is None:
            return self
        with _MAKING:
            made = memory.__dict__.get(self.name)
            if made is None:
                made = memory.__dict__[self.name] = self.make(memory)
            return made


def hook(m: Facade) -> ChatHookService:
    from .observe import ChatHookService

    return ChatHookService(m.ctx)


def lifecycle(m: Facade) -> LifecycleService:
    from ..lifecycle.service import LifecycleService

    return LifecycleService(m.ctx, reader=m._records)


def transfer(m: Facade) -> TransferService:
    from ..transfer.service import TransferService

    return TransferService(m.ctx, lister=m._records)


def browse(m: Facade) -> BrowseService:
    from .browse import BrowseService

    return BrowseService(m.ctx)


def batch(m: Facade) -> BatchService:
    from .batch import BatchService

    return BatchService(m.ctx, m._records)


def undo(m: Facade) -> UndoService:
    from .undo import UndoService

    return UndoService(m.ctx)


def graph(m: Facade) -> GraphService:
    from ..graph.service import GraphService

    return GraphService(m.ctx)


def consolidation(m: Facade) -> ConsolidationService:
    from ..consolidation.service import ConsolidationService
    from .forget import Honour

    return ConsolidationService(m.ctx, decayer=m._lifecycle, graph=m._graph,
                                honour=Honour(m.ctx, m._records.find, actor="consolidation"))
