"""`MilvusStore.search_hybrid` on a local store asks with the LiteClient's own request and ranker types
(store/lite_ranking.py, chosen by backend.hybrid_kinds), so a local process never imports pymilvus
(tests/test_import_state.py), and they ask for what pymilvus' would: the same fusion, the same hits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hippocampus.store.backend import hybrid_kinds
from hippocampus.store.lite_ranking import HYBRID

ROOT = Path(__file__).resolve().parents[2]

CHECK = r"""
import sys
from hippocampus import Memory
from hippocampus.testing import DeterministicEmbedder
from hippocampus.store import filters as F
emb = DeterministicEmbedder()
with Memory(milvus_uri=sys.argv[1], embedder=emb) as m:
    for text in ("I cycle to the office", "My sister lives in Shanghai", "The office moved to Porto"):
        m.add(text, user_id="ann", infer=False)
    vec = emb.encode(["office"], role="query")[0]
    for ranker in ("rrf", "weighted"):
        hits = m.store.search_hybrid(vec, "office", F.eq("user_id", "ann"), 3, ranker=ranker)
        assert hits and all("office" in h["text"] for h in hits[:2]), hits
assert "pymilvus" not in sys.modules, "a local store's hybrid search imported pymilvus"
print("ok")
"""


def test_a_local_hybrid_search_never_imports_pymilvus(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIPPOCAMPUS_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "m.db")], env=env, capture_output=True, cwd=tmp_path,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_the_local_types_ask_for_what_pymilvus_types_ask_for() -> None:
    pymilvus = pytest.importorskip("pymilvus")
    ours, theirs = HYBRID, hybrid_kinds(object())  # a client without its own types: pymilvus'
    assert theirs.RRFRanker is pymilvus.RRFRanker
    assert ours.RRFRanker(60).dict() == theirs.RRFRanker(60).dict()
    assert ours.WeightedRanker(0.7, 0.3).dict() == theirs.WeightedRanker(0.7, 0.3).dict()
    assert ours.WeightedRanker(0.7, 0.3, norm_score=False).dict() == theirs.WeightedRanker(0.7, 0.3, norm_score=False).dict()
    args = dict(data=[[0.1, 0.2]], anns_field="vector", param={"metric_type": "COSINE"}, limit=8, expr='user_id == "a"')
    mine, real = ours.AnnSearchRequest(**args), theirs.AnnSearchRequest(**args)
    assert [getattr(mine, k) for k in args] == [getattr(real, k) for k in args]


def test_a_local_client_carries_its_own_types(tmp_path: Path) -> None:
    from hippocampus.store.lite_client import LiteClient

    client = LiteClient(str(tmp_path / "m.db"))
    try:
        assert hybrid_kinds(client) is HYBRID
    finally:
        client.close()
