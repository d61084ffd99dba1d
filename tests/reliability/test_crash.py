"""Crash safety of add: a subprocess adds memories in a loop and is killed with SIGKILL at a random point
(while starting, while creating the store, mid-add); after a restart every acknowledged memory is there
exactly once, nothing is duplicated, and the store opens and keeps working."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from hippocampus import HistoryAction, Memory

from ._support import COUNTS

CHILD = Path(__file__).with_name("_child.py")
SEEDS = [11, 23, 37, 41]
ROUNDS = 2  # kills per store: the second one hits a store that already recovered once
HANG_GUARD_S = 120  # only to turn a hang into a failure; never asserts speed


class Child:
    """A _child.py process whose stdout lines are collected as they arrive."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._cv = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def wait_for(self, prefix: str) -> str:
        deadline = time.monotonic() + HANG_GUARD_S
        with self._cv:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"child exited ({self.proc.returncode}) without {prefix!r}: {self.lines}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"child never said {prefix!r}")
                self._cv.wait(min(left, 0.5))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(HANG_GUARD_S)
        self._reader.join(HANG_GUARD_S)

    def finish(self) -> int:
        rc = self.proc.wait(HANG_GUARD_S)
        self._reader.join(HANG_GUARD_S)
        return rc


def _acks(lines: list[str]) -> dict[int, str]:
    out = {}
    for line in lines:
        if line.startswith("ack "):
            _, mid, text = line.split(" ", 2)
            out[int(mid)] = text
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_sigkill_during_add_loses_and_duplicates_nothing(tmp_path: Path, embedder, seed: int):
    rng = random.Random(seed)
    path = str(tmp_path / "crash.db")
    acked: dict[int, str] = {}
    for round_no in range(ROUNDS):
        child = Child("add-loop", path, "100000", f"s{seed}r{round_no}")
        if round_no == 0 and rng.random() < 0.5:
            # anywhere from interpreter start-up to the first adds, store creation included
            time.sleep(rng.uniform(0.5, 4.0))
            point = "start-up"
        else:
            child.wait_for("ready")
            time.sleep(rng.uniform(0.0, 1.5))
            point = "adding"
        child.kill()
        acked.update(_acks(child.lines))
        COUNTS["SIGKILLs survived (add)"] += 1
        COUNTS[f"SIGKILLs during {point}"] += 1

        # restart: the store opens, every acknowledged memory is there once, nothing duplicated
        with Memory(milvus_uri=path, embedder=embedder) as memory:
            rows = memory.get_all("crash-user")
            by_id = {r.id: r.text for r in rows}
            lost = [mid for mid, text in acked.items() if by_id.get(mid) != text]
            if round_no == ROUNDS - 1:
                COUNTS["acknowledged memories checked after kills (distinct)"] += len(acked)
            COUNTS["memories lost"] += len(lost)
            assert lost == [], f"acknowledged memories lost after SIGKILL: {lost}"
            dupes = [t for t, n in Counter(r.text for r in rows).items() if n > 1]
            assert dupes == [], f"duplicated after SIGKILL: {dupes}"
            assert len(rows) <= len(acked) + round_no + 1  # at most the one add in flight per kill
            for mid in acked:
                created = [e for e in memory.history(mid, user_id="crash-user") if e.action is HistoryAction.CREATED]
                assert len(created) == 1
            # and it keeps working: a new memory gets a fresh id and is found
            new_id = memory.add(f"after kill {seed}/{round_no}", user_id="probe").ids[0]
            assert new_id not in by_id
            assert memory.get(new_id, user_id="probe").text == f"after kill {seed}/{round_no}"
