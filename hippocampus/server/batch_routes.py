"""REST routes for the batch verbs, update_many and delete_many (memory/batch.py states their semantics):
up to 1,000 items per call, a result per item. The app includes this router (rest.ROUTERS).

The tenant check is the call's user id, as for every route: a user the key may not touch is a 404
for the whole call; an id of another user (or tenant) is simply not this user's memory, so it comes
back `not_found` in its item and is never touched.
"""

from __future__ import annotations

from ..contract.replies import BatchDeleteResult, BatchUpdateResult
from ..contract.wire import DeleteManyRequest, UpdateManyRequest
from .deps import MemoryDep, TenantDep, v1_router

router = v1_router()


@router.post("/memories/batch/update", response_model=BatchUpdateResult,
             summary="Update up to 1,000 memories, a result per item (update_many)")
def update_many(body: UpdateManyRequest, tenant: TenantDep, memory: MemoryDep) -> BatchUpdateResult:
    tenant.check(body.user_id, f"user {body.user_id!r} not found")
    return memory.update_many(body.items, user_id=body.user_id)


@router.post("/memories/batch/delete", response_model=BatchDeleteResult,
             summary="Delete up to 1,000 memories, a result per id (delete_many)")
def delete_many(body: DeleteManyRequest, tenant: TenantDep, memory: MemoryDep) -> BatchDeleteResult:
    tenant.check(body.user_id, f"user {body.user_id!r} not found")
    return memory.delete_many(body.memory_ids, user_id=body.user_id)
