"""The REST routes: one typed endpoint per verb of `Memory`, each a thin call into the facade.

Every route checks the caller's tenant first (a user id the key may not touch is NotFound, worded
as the library words a missing memory), then calls Memory; the facade validates and does the work.
Routes are plain `def`s: FastAPI runs them in its thread pool, and Memory is thread-safe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Query, Request

from .. import validation as V
from ..contract import wire
from ..contract.replies import GraphView
from ..contract.requests import ContextRequest, PageRequest, fields_of
from ..contract.verbs import by_name
from ..contract.wire import (
    AddManyRequest,
    AddRequest,
    ConsolidateRequest,
    ContextReply,
    CurateRequest,
    DecayRequest,
    Deleted,
    IdsResult,
    MarkUsedRequest,
    ObserveRequest,
    ResetResult,
    SearchRequest,
    UpdateRequest,
    json_filters,
)
from ..errors import InvalidInput
from ..memory import Memory
from ..models import (
    AddResult,
    ConsolidationStats,
    DecayStats,
    HistoryEvent,
    MemoryPage,
    MemoryRecord,
    MemoryType,
    ObserveResult,
    SearchResult,
    UndoResult,
    damaged_rows,
)
from .batch_routes import router as batch_router
from .deps import JobsDep, MemoryDep, TenantDep, v1_router
from .rest_params import query_params
from .transfer_routes import router as transfer_router

router = v1_router()
# every /v1 router, in the order the app includes them (deps.v1_router says why never one in another):
# export, import, graph build (transfer_routes.py); update_many, delete_many (batch_routes.py); the rest
ROUTERS = (transfer_router, batch_router, router)


def _missing(memory_id: int) -> str:
    return f"memory {memory_id} not found for this user"  # Memory.get's own words


@router.post("/memories", response_model=AddResult, summary="Remember a turn (add)")
def add(body: AddRequest, tenant: TenantDep, memory: MemoryDep, jobs: JobsDep) -> AddResult:
    agent = tenant.check_agent(body.user_id, body.agent_id, f"user {body.user_id!r} not found")
    result = memory.add(**{**fields_of(body), "agent_id": agent})  # the body is the verb's request (contract/requests.py)
    if result.pending_decision:
        jobs.nudge()  # the background worker decides it (write_decision: deferred)
    return result


@router.post("/memories/batch", response_model=IdsResult, summary="Store many turns as-is (add_many)")
def add_many(body: AddManyRequest, tenant: TenantDep, memory: MemoryDep) -> IdsResult:
    if len(body.items) > wire.MAX_ADD_MANY:  # one request must not hold the shared embedders for minutes (wire.py)
        raise InvalidInput(f"a batch may hold at most {wire.MAX_ADD_MANY} items, this one holds {len(body.items)}: "
                           "send it in several requests")
    for item in body.items:
        user_id = item.get("user_id") if isinstance(item, dict) else None
        tenant.check(user_id, f"user {user_id!r} not found")
    return IdsResult(ids=memory.add_many(body.items, batch_size=body.batch_size))


@router.post("/search", response_model=SearchResult, summary="Recall memories for a query")
def search(body: SearchRequest, tenant: TenantDep, memory: MemoryDep) -> SearchResult:
    agent = tenant.check_agent(body.user_id, body.agent_id, f"user {body.user_id!r} not found")
    return memory.search(**{**fields_of(body), "agent_id": agent})  # the body is the verb's request (contract/requests.py)


@router.get("/memories", response_model=MemoryPage, summary="A page of a user's memories, oldest event first")
def page(tenant: TenantDep, memory: MemoryDep,
         fields: Annotated[dict[str, Any], Depends(query_params(PageRequest, by_name()["page"].rest,
                                                                {"filters": str | None}))]) -> MemoryPage:
    agent = tenant.check_agent(fields["user_id"], fields.get("agent_id"), f"user {fields['user_id']!r} not found")
    # PageRequest's fields (rest_params.py); filters come as JSON text in the query string
    return memory.page(**{**fields, "filters": _query_filters(fields.get("filters")), "agent_id": agent})


def _query_filters(raw: str | None) -> dict[str, Any] | None:
    """`filters` from the query string as search takes them; JSON the parser itself cannot hold (nested
    past its stack, an integer of over 4,300 digits) is the caller's bad input, a 422 like in a body."""
    try:
        return json_filters(raw)
    except InvalidInput:
        raise
    except RecursionError:
        raise InvalidInput(f"filters are nested too deeply; the limit is {V.METADATA_MAX_DEPTH} levels") from None
    except ValueError as exc:  # int() of too many digits: Python's own limit (sys.get_int_max_str_digits)
        raise InvalidInput(f"filters must be a JSON object of filters: {str(exc).split(';')[0][:120]}") from None


@router.get("/memories/{memory_id}", response_model=MemoryRecord, summary="One memory")
def get(memory_id: int, user_id: str, tenant: TenantDep, memory: MemoryDep) -> MemoryRecord:
    tenant.check_owned(user_id, _missing(memory_id), lambda: memory.get(memory_id, user_id=user_id).metadata)
    return memory.get(memory_id, user_id=user_id)


@router.patch("/memories/{memory_id}", response_model=MemoryRecord, summary="Replace a memory's text (the id stays)")
def update(memory_id: int, body: UpdateRequest, tenant: TenantDep, memory: MemoryDep) -> MemoryRecord:  # type: ignore[valid-type]
    fields = fields_of(body)  # UpdateRequest's fields but the id (contract/wire.py)
    tenant.check_owned(fields["user_id"], _missing(memory_id), lambda: memory.get(memory_id, user_id=fields["user_id"]).metadata)
    return memory.update(memory_id, **fields)


@router.delete("/memories/{memory_id}", response_model=Deleted, summary="Delete one memory (its history stays)")
def delete(memory_id: int, user_id: str, tenant: TenantDep, memory: MemoryDep) -> Deleted:
    tenant.check_owned(user_id, _missing(memory_id), lambda: memory.get(memory_id, user_id=user_id).metadata)
    memory.delete(memory_id, user_id=user_id)
    return Deleted(deleted=memory_id)


@router.get("/memories/{memory_id}/history", response_model=list[HistoryEvent], summary="Every change to a memory")
def history(memory_id: int, user_id: str, tenant: TenantDep, memory: MemoryDep) -> list[HistoryEvent]:
    tenant.check_owned(user_id, f"no history for memory {memory_id} for this user",
                       lambda: memory.get(memory_id, user_id=user_id).metadata)  # a bound key: a memory still there
    return memory.history(memory_id, user_id=user_id)


@router.post("/memories/used", response_model=list[MemoryRecord], summary="Report which recalled memories an answer used")
def mark_used(body: MarkUsedRequest, tenant: TenantDep, memory: MemoryDep) -> list[MemoryRecord]:
    tenant.check(body.user_id, f"memories {sorted(set(body.memory_ids))} not found for this user; nothing was changed")
    return memory.mark_used(body.memory_ids, user_id=body.user_id, context=body.context)


@router.post("/observe", response_model=ObserveResult, summary="After a turn: one KnowledgeMonitor call (add, update, use, delete)")
def observe(body: ObserveRequest, tenant: TenantDep, memory: MemoryDep) -> ObserveResult:
    agent = tenant.check_agent(body.user_id, body.agent_id, f"user {body.user_id!r} not found")
    return memory.observe(**{**fields_of(body), "agent_id": agent})  # the body is the verb's request (contract/requests.py)


@router.delete("/memories", response_model=ResetResult, summary="Erase a user's memories and history")
def reset(user_id: str, tenant: TenantDep, memory: MemoryDep) -> ResetResult:
    tenant.check(user_id, f"user {user_id!r} not found")
    return ResetResult(user_id=user_id, deleted=memory.reset(user_id))


@router.post("/consolidate", response_model=ConsolidationStats, summary="Run consolidation now (waits for a run in progress)")
def consolidate(tenant: TenantDep, jobs: JobsDep, body: ConsolidateRequest | None = None) -> ConsolidationStats:
    user_id = body.user_id if body else None
    tenant.check(user_id, f"user {user_id!r} not found")
    return jobs.run(tenant.scope(user_id), trigger="api")


@router.post("/decay", response_model=DecayStats, summary="Archive and forget what has decayed (lifecycle)")
def decay(tenant: TenantDep, memory: MemoryDep, jobs: JobsDep, body: DecayRequest | None = None) -> DecayStats:
    body = body or DecayRequest()
    tenant.check(body.user_id, f"user {body.user_id!r} not found")
    parts = [p for u in tenant.scope(body.user_id) for p in jobs.each_user("decay", lambda v: memory.decay(v, now=body.now), u)]
    return DecayStats(**{k: sum(getattr(p, k) for p in parts) for k in DecayStats.model_fields})


@router.get("/context", response_model=ContextReply, summary="The prompt block of a user's memories")
def context(tenant: TenantDep, memory: MemoryDep,
            fields: Annotated[dict[str, Any], Depends(query_params(ContextRequest, by_name()["context"].rest))]) -> ContextReply:
    agent = tenant.check_agent(fields["user_id"], fields.get("agent_id"), f"user {fields['user_id']!r} not found")
    return ContextReply(context=memory.context(**{**fields, "agent_id": agent}))  # ContextRequest's fields (rest_params.py)


@router.get("/graph", response_model=GraphView, summary="A user's entities and triples (graph memory)")
def graph(tenant: TenantDep, memory: MemoryDep, user_id: str, limit: int | None = Query(None, ge=0, le=1000)) -> GraphView:
    tenant.check(user_id, f"user {user_id!r} not found")
    return memory.graph(user_id, limit=limit)


@router.post("/memories/{memory_id}/curate", response_model=MemoryRecord, summary="Set a memory's category or importance")
def curate(memory_id: int, body: CurateRequest, tenant: TenantDep, memory: MemoryDep) -> MemoryRecord:  # type: ignore[valid-type]
    fields = fields_of(body)  # CurateRequest's fields but the id (contract/wire.py)
    tenant.check(fields["user_id"], _missing(memory_id))
    return memory.curate(memory_id, **fields)


@router.post("/memories/{memory_id}/restore", response_model=MemoryRecord, summary="Bring back a memory that decay forgot")
def restore(memory_id: int, user_id: str, tenant: TenantDep, memory: MemoryDep) -> MemoryRecord:
    tenant.check(user_id, f"no history for memory {memory_id} for this user")
    return memory.restore(memory_id, user_id)


@router.post("/history/{event_id}/undo", response_model=UndoResult, summary="Undo one history event (the state before it comes back)")
def undo(event_id: int, user_id: str, tenant: TenantDep, memory: MemoryDep) -> UndoResult:
    tenant.check(user_id, f"no history event {event_id} for this user")
    return memory.undo(event_id, user_id)


@router.get("/stats", summary="Memories by kind; with an operator key also the service's own figures")
def stats(tenant: TenantDep, memory: MemoryDep, request: Request, user_id: str | None = None) -> dict[str, Any]:
    tenant.check(user_id, f"user {user_id!r} not found")
    scope = tenant.scope(user_id)
    if scope == [None] or len(scope) == 1:
        out = memory.stats(scope[0])
    else:  # a tenant key without user_id: the sum over its own users
        parts = [memory.stats(u) for u in scope]
        summed = ("total", *(t.value for t in MemoryType), *(k for k in ("without_cross_vector",) if k in parts[0]))
        out = {**parts[0], **{k: sum(p[k] for p in parts) for k in summed}}
    out["damaged"] = sum(damaged_rows(u) for u in scope)  # rows reads met with a damaged stamp (models.py)
    if tenant.is_operator:
        out["service"] = request.app.state.service_stats()
        return out
    return without_paths(out, memory)


def without_paths(value: Any, memory: Memory) -> Any:
    """What a tenant key may see of the server's figures: no `store` entry, and the store's location,
    its folder and the configured model and prompt folders replaced by "<server path>" wherever they
    appear (an error message in a consolidation run, say). An operator sees everything."""
    config = memory.config
    paths = [str(p) for p in (config.milvus_uri, config.embedding_model_path, config.prompts_dir) if p]
    if config.is_local_store:
        paths.append(str(Path(config.milvus_uri).expanduser().absolute().parent))
        paths.append(str(Path(config.milvus_uri).expanduser().absolute()))
    paths = sorted({p for p in paths if len(p) > 1}, key=len, reverse=True)  # the longest first: a path before its folder

    def scrub(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: scrub(x) for k, x in v.items() if k != "store"}
        if isinstance(v, (list, tuple)):
            return [scrub(x) for x in v]
        if isinstance(v, str):
            for p in paths:
                v = v.replace(p, "<server path>")
        return v

    return scrub(value)
