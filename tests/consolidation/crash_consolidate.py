"""Subprocess side of tests/consolidation/test_crash_consolidation.py (run as a script, never collected).

    python tests/crash_consolidate.py DB COLLECTION PAUSE_AT N

Runs one consolidation over the whole store with the offline rules provider and the
32-d hash embedder. When PAUSE_AT names a checkpoint of ConsolidationJob ("merge_inserted",
"merge_sources_deleted", "semantic_inserted"), the N-th time the job reaches it the
script prints "paused <name>" and sleeps, so the parent can SIGKILL it at exactly that
point; PAUSE_AT "none" runs straight through. Lines are flushed at once.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    db, collection, pause_at, nth = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    from hippocampus import Memory
    from hippocampus.consolidation.job import ConsolidationJob
    from hippocampus.llm.rules import RulesProvider
    from hippocampus.testing import DeterministicEmbedder

    reached = {"n": 0}

    def checkpoint(self: ConsolidationJob, name: str) -> None:
        if name == pause_at:
            reached["n"] += 1
            if reached["n"] == nth:
                print(f"paused {name}", flush=True)
                time.sleep(600)

    ConsolidationJob.checkpoint = checkpoint  # type: ignore[method-assign]
    with Memory(milvus_uri=db, collection_name=collection, embedder=DeterministicEmbedder(32, lexical=False), llm=RulesProvider(),
                t_merge_high=0.85, t_amb_low=0.65) as memory:
        print("started", flush=True)
        stats = memory.consolidate()
        print(f"done {stats.model_dump_json()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
