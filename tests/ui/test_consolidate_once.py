"""The UI's "Consolidate now" runs one job per user at a time (issue 42's finding 5, issue 45): a
second click while a run is going joins it. Before, 1,500 posts started 1,500 threads."""

from __future__ import annotations

import threading
import uuid

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app


def test_a_click_while_a_run_goes_joins_it(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"once_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add("I moved to Berlin in May", user_id="alice")
    jobs = create_app(memory, KeyRing.load(env={}), mcp=False, close_memory=False).state.consolidations
    threads = threading.active_count()
    with jobs._lock:  # a run in progress (the lock every run takes): the started one waits behind it
        ids = {jobs.start(["alice"], trigger="ui") for _ in range(1500)}
        other = jobs.start(["bob"], trigger="ui")
        assert len(ids) == 1 and other not in ids
        assert threading.active_count() <= threads + 2  # alice's one run and bob's, never 1,500
    run_id = ids.pop()
    for thread in list(threading.enumerate()):
        if thread.name in (f"consolidate-{run_id}", f"consolidate-{other}"):
            thread.join(timeout=120)
    done = jobs.tracked(run_id)
    assert done["finished"] and done["error"] is None and done["stats"]["examined"] >= 1
    again = jobs.start(["alice"], trigger="ui")
    assert again != run_id  # finished: the next click starts a new run
    for thread in [t for t in threading.enumerate() if t.name == f"consolidate-{again}"]:
        thread.join(timeout=120)
    memory.close()
