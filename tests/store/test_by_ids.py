"""MilvusStore.by_ids with the rest of a condition (`where`): the rows a filter `id in [...] and (rest)` finds,
each once, read by key on a local path (store/backend.keyed), across pages of ids and within a partition."""

from __future__ import annotations

from hippocampus import Memory
from hippocampus.store import filters as F
from hippocampus.store.milvus import MEMORY_FIELDS


def test_by_ids_with_the_rest_of_a_condition_finds_what_a_filter_finds(fresh_path: str, embedder) -> None:
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        ids = m.add_many([{"text": f"note {i} about {'tea' if i % 2 else 'coffee'}", "user_id": f"u{i % 3}"}
                          for i in range(30)])
        m.delete(ids[4], user_id="u1")
        store = m.store
        asked = [*ids[:12], ids[4], 999_999_999, ids[0], ids[0]]  # a deleted id, a missing one, repeats
        for rest in ("", F.eq("user_id", "u1"), F.and_(F.eq("user_id", "u0"), F.cmp("id", "<", ids[9]))):
            want = sorted(int(r["id"]) for r in store.query(F.and_(F.in_("id", asked), rest), ["id"], limit=100))
            got = [int(r["id"]) for r in store.by_ids(asked, MEMORY_FIELDS, where=rest)]
            assert sorted(got) == want and len(got) == len(set(got)), rest
        part = store.partition_for("u2")
        rest = F.cmp("id", ">=", ids[3])
        inside = sorted(int(r["id"]) for r in store.by_ids(ids, ["id"], part, where=rest))
        assert part and inside == sorted(int(r["id"]) for r in store.query(F.and_(F.in_("id", ids), rest), ["id"], 100, part))
        assert {ids[i] for i in range(3, 30) if i % 3 == 2} <= set(inside)  # u2's rows, and any sharing its bucket
        assert store.by_ids([], where=F.eq("user_id", "u1")) == []
