"""Cross-language search reads the companion in Milvus, in the user's bucket, every time (store/xvector.py;
issue 56, case 2): users whose first memories are written while other users' searches run are found at
once and stay found. An in-memory copy of the companion, filled by a background read, missed such a user
until the process restarted ("Which fruit am I allergic to?" answered "penicillin")."""

from __future__ import annotations

import threading
from pathlib import Path

from hippocampus import Memory

MANGO = "我对芒果有点过敏，吃了嘴巴会痒。"
PENICILLIN = "I'm allergic to penicillin; it gave me hives when I was a kid."
QUESTION = "Which fruit am I allergic to?"


def _top3(m: Memory, user: str) -> list[str]:
    return [h.text for h in m.search(QUESTION, user_id=user, limit=3).all[:3]]


def test_users_first_written_while_others_search_are_found(tmp_path: Path, embedder) -> None:
    path = str(tmp_path / "m.db")
    others = [f"u{i}" for i in range(160)]  # users in most of the companion's buckets
    new = [f"new{i}" for i in range(12)]
    with Memory(milvus_uri=path, embedder=embedder) as m:
        m.add_many([{"text": t, "user_id": u} for u in others for t in ("我住在杭州。", "I take the 8:15 train to work.")])
    with Memory(milvus_uri=path, embedder=embedder) as m:  # a process that opens a store with users already
        searched, stop, errors = threading.Semaphore(0), threading.Event(), []

        def search_others() -> None:
            try:
                k = 0
                while not stop.is_set():
                    m.search("我住在哪里？", user_id=others[k % len(others)], limit=3)
                    searched.release()
                    k += 1
            except Exception as exc:  # pragma: no cover - reported by the assertion below
                errors.append(exc)

        thread = threading.Thread(target=search_others)
        thread.start()
        try:
            assert searched.acquire(timeout=120)
            for user in new:  # one user's first memories after another, while the others' searches go on
                m.add_many([{"text": t, "user_id": user} for t in (PENICILLIN, MANGO)])
            assert searched.acquire(timeout=120)  # searches of others ran beside and after the writes
        finally:
            stop.set()
            thread.join(120)
        assert not errors and not thread.is_alive()
        for _ in range(2):  # found now, and still after whatever another user's searches started has ended
            assert {u: _top3(m, u)[0] for u in new} == dict.fromkeys(new, MANGO)
            for u in others[:20]:
                m.search("我住在哪里？", user_id=u, limit=3)
    with Memory(milvus_uri=path, embedder=embedder) as m:
        assert _top3(m, new[0])[0] == MANGO
