"""Counts that must agree (issue 31, case 12): the statistics page and `stats()` count a superseded
memory once, as superseded and never as active; a consolidation's `separated` counts memories
(never more than there are), its pairs apart; offline runs say the rules answered, not a model."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hippocampus import Memory
from hippocampus.llm.rules import RulesProvider
from hippocampus.models import HistoryAction
from hippocampus.processors.separator import EpisodicSeparator
from hippocampus.server.app import create_app
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import episode_row, scripted_chat
from tests.service_support import app_http

T0 = 1_767_225_600


@pytest.fixture(scope="module")
def mem(shared_db: Path) -> Iterator[Memory]:
    m = Memory(milvus_uri=str(shared_db), collection_name=f"ca_{uuid.uuid4().hex[:10]}", embedder=DeterministicEmbedder(8, lexical=False),
               llm=scripted_chat(), t_merge_high=0.85, t_amb_low=0.65)
    yield m
    m.close()


def _supersede(m: Memory, memory_id: int, by: int) -> None:
    """What the contradiction judge writes (lifecycle/supersede.py): the old fact keeps state active."""
    (row,) = m.store.query(f"id == {memory_id}", fields=["*"], limit=1)
    row = {k: v for k, v in row.items() if k != "sparse"}
    row["metadata"] = {**row["metadata"], "life": {**row["metadata"]["life"], "superseded_by": by}}
    m.store.upsert([row])


def _rows(html: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td></tr>", html)}


def test_a_superseded_memory_is_not_also_active_on_the_statistics_page(mem: Memory):
    user = f"u-{uuid.uuid4().hex[:8]}"
    old = mem.add("I live in Paris", user_id=user, memory_type="semantic").ids[0]
    new = mem.add("I live in Rome", user_id=user, memory_type="semantic").ids[0]
    mem.add("Went running this morning", user_id=user)
    _supersede(mem, old, new)
    view = mem.overview(user)
    assert view.superseded == 1 and view.by_state == {"active": 2}
    assert sum(view.by_state.values()) + view.superseded == view.total == mem.stats(user)["total"] == 3
    assert mem.browse(user, state="active").total == 2 and mem.browse(user, state="superseded").total == 1
    with app_http(create_app(mem, close_memory=False, mcp=False)) as http:
        page = http.get(f"/ui/users/{user}/stats", follow_redirects=True)
    assert page.status_code == 200, page.text[:300]
    rows = _rows(page.text)
    assert rows["state: active"] == 2 and rows["state: superseded"] == 1
    assert f"{mem.stats(user)['total']} memories." in page.text


def _alike(n: int, similarity: float, seed: int = 3) -> list[list[float]]:
    """n unit vectors whose pairwise cosine is `similarity`: a shared direction plus orthogonal parts."""
    basis, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(8, n + 1)))
    base, parts = basis[:, 0], basis[:, 1:].T
    return [(np.sqrt(similarity) * base + np.sqrt(1 - similarity) * p).tolist() for p in parts]


def test_separated_counts_memories_once_and_pairs_apart(mem: Memory):
    user = f"u-{uuid.uuid4().hex[:8]}"
    texts = ["dentist visit", "dentist again", "dentist once more", "dentist a fourth time"]
    ids = mem.store.insert([episode_row(user, t, v, T0 + 3600 * 24 * i) for i, (t, v) in enumerate(zip(texts, _alike(4, 0.75)))])
    stats = mem.consolidate(user_id=user)
    assert stats.separated_pairs == 6  # every pair of the four is ambiguous and told apart
    assert stats.separated == 4 <= len(ids)  # each memory once, though each was told apart three times
    separated = {i for i in ids if any(e.action is HistoryAction.SEPARATED for e in mem.history(i, user))}
    assert separated == set(ids)


def test_offline_runs_report_the_rules_not_a_model(shared_db: Path):
    offline = Memory(milvus_uri=str(shared_db), collection_name=f"co_{uuid.uuid4().hex[:10]}",
                     embedder=DeterministicEmbedder(8, lexical=False), t_merge_high=0.85, t_amb_low=0.65)
    try:
        assert offline.llm.model == RulesProvider.model
        user = f"u-{uuid.uuid4().hex[:8]}"
        va, vb = _alike(2, 0.75)
        a, b = offline.store.insert([episode_row(user, "I went to the dentist", va, T0),
                                     episode_row(user, "I went to the dentist with my sister", vb, T0 + 86400 * 3, chat_id="c2")])
        result = EpisodicSeparator(offline.llm).separate(offline.get(a, user), offline.get(b, user))
        assert result.facts_path == "rules" and not result.asked_again
        offline.consolidate(user_id=user)
        paths = [e.details.get("facts_path") for i in (a, b) for e in offline.history(i, user) if "facts_path" in e.details]
        assert "model" not in paths and all(p.startswith("rules") or p == "union" for p in paths)
    finally:
        offline.close()


def test_a_scripted_model_still_reports_model(mem: Memory):
    user = f"u-{uuid.uuid4().hex[:8]}"
    va, vb = _alike(2, 0.75, seed=5)
    a, b = mem.store.insert([episode_row(user, "first telling", va, T0), episode_row(user, "second telling", vb, T0 + 60)])
    result = EpisodicSeparator(mem.llm).separate(mem.get(a, user), mem.get(b, user))
    assert result.facts_path == "model"
