"""Importing hippocampus changes no process-wide state (issue 56): os.environ and other libraries' loggers
are as they were; what the store needs is set up when a store is opened (store/connection.py), what a model
needs when the model loads (embeddings/offline.py, local.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECK = r"""
import logging, os, sys
LOGGERS = ("pymilvus", "pymilvus.client.iterator.query_iterator", "jieba")
def state():
    return dict(os.environ), {n: list(logging.getLogger(n).filters) for n in LOGGERS}, \
        [f for h in logging.getLogger("pymilvus").handlers for f in h.filters]  # pymilvus adds a handler as it loads
before = state()
import hippocampus
from hippocampus import Memory
import hippocampus.store.connection, hippocampus.store.milvus, hippocampus.memory
import hippocampus.embeddings.crosslang, hippocampus.embeddings.local, hippocampus.embeddings.offline
import hippocampus.cli.app, hippocampus.server.app
after = state()
assert after[0] == before[0], sorted(set(after[0].items()) ^ set(before[0].items()))
assert after[1:] == before[1:], (before[1:], after[1:])
from hippocampus.testing import DeterministicEmbedder
with Memory(milvus_uri=sys.argv[1], embedder=DeterministicEmbedder()) as m:  # opening a store sets them up
    m.add("I live in Porto.", user_id="ann")
opened = state()
assert opened[0]["MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES"] == str(8 << 20)
assert opened[1]["jieba"], opened[1]
# a local store is opened through milvus-lite's in-process API (store/lite_client.py): pymilvus and grpc stay out
assert not {"pymilvus", "grpc"} & set(sys.modules), sorted({"pymilvus", "grpc"} & set(sys.modules))
print("ok")
"""


def test_importing_hippocampus_leaves_environment_and_loggers_alone(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES", "OMP_WAIT_POLICY")}
    env.update(PYTHONPATH=str(ROOT), HIPPOCAMPUS_HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "m.db")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
