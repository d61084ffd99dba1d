"""The replies of the verbs whose result models were born beside their services (the batch verbs, the
graph, imports): declared here, in the contract, so that a face that only sends and reads them (the
Client, remote/calls.py) imports no service, and the services fill them in. The other replies are the
kernel's records (models.py: MemoryRecord, SearchResult, AddResult, ...)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, computed_field

from ..models.base import Model

Status = Literal["ok", "not_found", "invalid", "unchanged", "failed"]


# ---------------------------------------------------------------------- the batch verbs (memory/batch.py)
class BatchItem(Model):
    """What happened to one item of a batch."""

    id: int
    status: Status
    error: str | None = None  # why, for every status but ok and unchanged


class BatchResult(Model):
    """A result per item, in the order given (duplicate ids of delete_many once)."""

    results: list[BatchItem] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[str, int]:
        """How many items ended in each status."""
        out: dict[str, int] = {}
        for item in self.results:
            out[item.status] = out.get(item.status, 0) + 1
        return out

    def ids(self, status: Status) -> list[int]:
        """The ids of the items that ended in `status`."""
        return [item.id for item in self.results if item.status == status]


class BatchUpdateResult(BatchResult):
    """What `update_many` did, item by item."""


class BatchDeleteResult(BatchResult):
    """What `delete_many` did: core and system memories are skipped and listed, never deleted."""

    deleted: list[int] = Field(default_factory=list)
    skipped_core: list[int] = Field(default_factory=list)
    not_found: list[int] = Field(default_factory=list)


# ---------------------------------------------------------------------- the graph (graph/build.py, graph/service.py)
class GraphStats(Model):
    """What one build did."""

    users: int = 0
    memories_read: int = 0  # memories the extractor read (new, or changed since)
    entities: int = 0  # entity rows written (new or with a new support)
    triples: int = 0
    llm_calls: int = 0
    errors: int = 0  # batches the model failed on: read again next run
    seconds: float = 0.0


class GraphEntityView(Model):
    name: str
    type: str
    memory_ids: list[int] = Field(default_factory=list)  # the memories that name it
    first_seen: int = 0  # the earliest and latest of those memories' times
    last_seen: int = 0


class GraphTripleView(Model):
    subject: str
    predicate: str
    object: str
    negated: bool = False
    frequency: str = ""
    condition: str = ""
    memory_ids: list[int] = Field(default_factory=list)  # the memories that state it
    first_seen: int = 0
    last_seen: int = 0


class GraphView(Model):
    """One user's graph: entities (most mentioned first) and triples, and how many memories were read."""

    user_id: str
    memories_read: int = 0
    entities: list[GraphEntityView] = Field(default_factory=list)
    triples: list[GraphTripleView] = Field(default_factory=list)


# ---------------------------------------------------------------------- imports (transfer/service.py)
class ImportReport(Model):
    """What an import did: ids updated, created and left as they were; entries skipped, and why."""

    updated: list[int] = Field(default_factory=list)
    created: list[int] = Field(default_factory=list)
    unchanged: list[int] = Field(default_factory=list)
    skipped: int = 0
    warnings: list[str] = Field(default_factory=list)
