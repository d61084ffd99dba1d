"""Crash safety of consolidation: SIGKILL a run in a subprocess at chosen points and after
random delays, then re-run: every original episode is still present (in a merged record or
as itself), nothing is duplicated, and no merge is left half-done."""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.consolidation.rules import normalise
from hippocampus.llm.rules import RulesProvider
from hippocampus.testing import DeterministicEmbedder
from tests.consolidation_helpers import episode_row, vector_pair

CHILD = Path(__file__).with_name("crash_consolidate.py")
GROUPS = 24
T0 = 1_767_258_000  # 2026-01-01 09:00 UTC: every episode on one day


def _seed_store(path: str) -> list[tuple[str, str]]:
    """GROUPS pairs of duplicate tellings (b repeats a and adds a detail), similarity 0.97."""
    pairs = []
    with Memory(milvus_uri=path, collection_name="crash", embedder=DeterministicEmbedder(32, lexical=False), t_merge_high=0.85, t_amb_low=0.65) as m:
        rows = []
        for i in range(GROUPS):
            a = f"On trip {i} we walked around the harbour of town{i:03d}"
            b = f"{a}. I like the noodles of town{i:03d}"
            va, vb = vector_pair(0.97, dim=32, seed=i)
            rows += [episode_row("traveller", a, va, T0 + 60 * i, f"chat{i}"), episode_row("traveller", b, vb, T0 + 60 * i + 30, f"chat{i}")]
            pairs.append((a, b))
        m.store.insert(rows)
    return pairs


class _Child:
    def __init__(self, path: str, pause_at: str = "none", nth: int = 1):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.stderr = Path(path).with_suffix(".stderr")
        with open(self.stderr, "w") as err:
            self.proc = subprocess.Popen([sys.executable, str(CHILD), path, "crash", pause_at, str(nth)],
                                         stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        self.lines: list[str] = []

    def wait_for(self, prefixes: tuple[str, ...], timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
                self.lines.append(line.strip())
                if line.startswith(prefixes):
                    return line.strip()
        tail = self.stderr.read_text(errors="replace")[-2000:] if self.stderr.exists() else ""
        raise AssertionError(f"child never printed {prefixes}: {self.lines}\n{tail}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


def _check_nothing_lost(m: Memory, pairs: list[tuple[str, str]]) -> None:
    texts = [r.text for r in m.get_all("traveller", "episodic")]
    for a, b in pairs:
        assert any(a in t for t in texts), f"lost: {a}"
        assert any(b in t for t in texts), f"lost: {b}"


def _check_converged(m: Memory, pairs: list[tuple[str, str]]) -> None:
    episodes = m.get_all("traveller", "episodic")
    for i, (_a, b) in enumerate(pairs):
        holders = [r for r in episodes if f"town{i:03d}" in r.text]
        assert len(holders) == 1, f"group {i} held by {[r.text for r in holders]}"
        assert b in holders[0].text
    assert not [r.id for r in episodes if r.metadata.get("merge_pending")]
    semantic = [normalise(r.text) for r in m.get_all("traveller", "semantic")]
    assert len(semantic) == len(set(semantic)), "a semantic fact was stored twice"


def _rerun_and_check(path: str, pairs: list[tuple[str, str]], interrupted_merge: bool = False) -> None:
    with Memory(milvus_uri=path, collection_name="crash", embedder=DeterministicEmbedder(32, lexical=False), llm=RulesProvider(),
                t_merge_high=0.85, t_amb_low=0.65) as m:
        _check_nothing_lost(m, pairs)  # right after the kill
        if interrupted_merge:  # the kill really hit a half-done merge: replacement written, flag still set
            assert [r for r in m.get_all("traveller", "episodic") if r.metadata.get("merge_pending")]
        stats = m.consolidate()
        assert stats.errors == 0
        _check_nothing_lost(m, pairs)
        _check_converged(m, pairs)
        again = m.consolidate()  # and a further run changes nothing
        assert (again.merged, again.semantic_created) == (0, 0)
        _check_converged(m, pairs)


@pytest.mark.parametrize(
    "pause_at,nth",
    [("merge_inserted", 1), ("merge_inserted", 5), ("merge_sources_deleted", 3), ("semantic_inserted", 1)],
)
def test_sigkill_at_a_checkpoint_then_rerun(tmp_path: Path, pause_at: str, nth: int):
    path = str(tmp_path / "crash.db")
    pairs = _seed_store(path)
    child = _Child(path, pause_at, nth)
    try:
        line = child.wait_for(("paused", "done"))
        assert line == f"paused {pause_at}", line
    finally:
        child.kill()
    _rerun_and_check(path, pairs, interrupted_merge=pause_at.startswith("merge"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_after_a_random_delay_then_rerun(tmp_path: Path, seed: int):
    path = str(tmp_path / "crash.db")
    pairs = _seed_store(path)
    child = _Child(path)
    try:
        child.wait_for(("started",))
        time.sleep(random.Random(seed).uniform(0.05, 1.5))
    finally:
        child.kill()
    _rerun_and_check(path, pairs)
