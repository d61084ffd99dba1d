"""A rewrite never brings back a memory that another process removed (the replica harness's "exists but
its history removed it"). Within one process the store's lock orders a rewrite's existence check and its
write against a delete; on a shared server a second replica can remove the memory between the two. The
remover writes its event before it deletes the row (store/removal.py), so the rewrite reads the history
after its write (MilvusStore.upsert) and deletes again a row whose memory was removed.

The second replica here is a second store handle on the same `milvus-lite server`, caught between its
two steps: its removal event written, the row not yet deleted. The rewrite's check passes (the row is
there), so only the read after the write can see it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hippocampus import Memory
from hippocampus.errors import NotFound
from hippocampus.memory.records import deletion_event
from hippocampus.models import HistoryAction, HistoryEvent
from hippocampus.store import MEMORY_FIELDS, MilvusStore
from hippocampus.store import filters as F
from hippocampus.testing import DeterministicEmbedder
from tests.scale.history_check import check_history


@pytest.fixture
def pair(scale_server: str) -> Iterator[tuple[Memory, MilvusStore]]:
    """A Memory on the shared server and a second handle on its collection (another replica)."""
    m = Memory(milvus_uri=scale_server, collection_name=f"races_{uuid.uuid4().hex[:8]}", embedder=DeterministicEmbedder())
    other = MilvusStore(scale_server, m.embedder.dim, m.embedder.model_name, collection=m.store.collection)
    try:
        yield m, other
    finally:
        other.close()
        m.close()


def _events(store: MilvusStore, memory_id: int) -> list[str]:
    return [e["action"] for e in store.history(F.eq("memory_id", memory_id))]


def test_an_update_racing_another_replicas_delete_leaves_it_deleted(pair: tuple[Memory, MilvusStore]):
    m, other = pair
    mid = m.add("I keep my bike in the basement", user_id="ana", infer=False).ids[0]
    other.add_history([deletion_event(m.get(mid, user_id="ana"), "ana")])  # the other replica's delete, half done
    with pytest.raises(NotFound, match="deleted or merged meanwhile"):
        m.update(mid, "I keep my bike in the hallway", user_id="ana")
    assert other.by_ids([mid]) == []  # the delete stands for every replica
    assert _events(other, mid) == ["created", "deleted"]  # the update's event taken back
    report = check_history(other)
    assert report, report.summary()


def test_a_consolidation_rewrite_racing_a_merge_into_another_record_is_dropped(pair: tuple[Memory, MilvusStore]):
    m, other = pair
    keep = m.add("I went to Porto in June", user_id="ana", infer=False).ids[0]
    merged_away = m.add("I went to Porto in June with Rui", user_id="ana", infer=False).ids[0]
    read = [m.get(i, user_id="ana") for i in (keep, merged_away)]
    other.add_history([HistoryEvent(memory_id=merged_away, user_id="ana", action=HistoryAction.MERGED, actor="consolidation",
                                    details={"merged_into": keep + 1000}).model_dump(mode="json")])  # another replica's merge, half done
    rows = [{**r, "metadata": {**(r.get("metadata") or {}), "reviewed": True}} for r in m.store.by_ids([keep, merged_away], [*MEMORY_FIELDS, "vector"])]
    with m.ctx.write_lock:
        written = m.ctx.writer.rewrite_held(rows, read)
    assert written == {keep}
    assert {int(r["id"]) for r in other.by_ids([keep, merged_away])} == {keep}
