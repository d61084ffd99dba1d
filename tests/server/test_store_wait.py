"""`serve` waits, bounded and logged, for a store another process holds (server/store_wait.py, issue 57):
the pure loop with a fake clock, then a real `serve` that starts once a process in this test lets the
store go."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hippocampus import Memory
from hippocampus.errors import StoreLockedError
from hippocampus.server.store_wait import LONGEST_PAUSE_S, open_waiting
from tests.service_support import ServiceProcess, free_port


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def _opener(locked_times: int) -> tuple[list[int], object]:
    tries: list[int] = []

    def open_store() -> str:
        tries.append(1)
        if len(tries) <= locked_times:
            raise StoreLockedError("held by pid 4711")
        return "the store"

    return tries, open_store


def test_a_store_held_a_while_is_waited_for_each_wait_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock, (tries, open_store) = _Clock(), _opener(5)
    with caplog.at_level(logging.WARNING, logger="hippocampus.server.store_wait"):
        assert open_waiting(open_store, 60, clock.sleep, lambda: clock.now) == "the store"
    assert len(tries) == 6 and len(caplog.records) == 5
    assert clock.pauses == sorted(clock.pauses) and max(clock.pauses) <= LONGEST_PAUSE_S  # growing, bounded
    assert "held by pid 4711" in caplog.records[0].getMessage()


def test_past_the_bound_the_error_is_raised() -> None:
    clock, (tries, open_store) = _Clock(), _opener(10_000)
    with pytest.raises(StoreLockedError):
        open_waiting(open_store, 10, clock.sleep, lambda: clock.now)
    assert clock.now == pytest.approx(10) and 5 < len(tries) < 100


def test_no_wait_asked_is_no_wait() -> None:
    clock, (tries, open_store) = _Clock(), _opener(1)
    with pytest.raises(StoreLockedError):
        open_waiting(open_store, 0, clock.sleep, lambda: clock.now)
    assert clock.pauses == [] and len(tries) == 1


def test_serve_starts_once_the_process_holding_the_store_lets_it_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path / "home"))
    db, log = str(tmp_path / "held.db"), tmp_path / "serve.log"
    holder = Memory(milvus_uri=db)
    holder.add("I keep my bicycle in the garage", user_id="dana")
    released: list[bool] = []

    def let_go_once_waiting() -> bool:  # ServiceProcess polls this through `healthy` until the service answers
        if not released and "waiting" in (log.read_text(errors="replace") if log.exists() else ""):
            holder.close()
            released.append(True)
        return False

    class _Watched(ServiceProcess):
        def healthy(self) -> bool:
            return let_go_once_waiting() or super().healthy()

    service = _Watched(db, free_port(), log, "--store-wait", "120")
    try:
        assert released, "the service answered without waiting for the store"
        assert "the store is held by another process" in log.read_text(errors="replace")
    finally:
        if not released:
            holder.close()
        assert service.stop()
