"""A service restarted while cron's `hippocampus consolidate` runs comes back and refuses no turn (issue 57:
with the record naming a dead pid, the cron job opened the store itself, the restarted `serve` exited with
StoreLockedError and 183 chat-hook turns were refused in 35 s). A command that finds a service starting for
its store waits for it; a consolidation run in this process gives way to it between two steps; `serve`
waits for a store held by a short command (server/store_wait.py). Real processes on a temporary store,
deadlines only as guards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hippocampus import Memory
from hippocampus.cli import registry
from hippocampus.cli.app import app
from hippocampus.cli.consolidate import GiveWay
from tests.service_support import ServiceProcess, free_port

RUN_GUARD_S = 300  # one command: turns a hang into a failure, never asserts speed
TURNS = 8  # the chat hook's turns after the restart


def _young_record(pid: int, store: str) -> registry.ServiceRecord:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return registry.ServiceRecord(url="http://127.0.0.1:9", pid=pid, store=registry.store_key(store), started_at=now,
                                  secret="s")


def _write(record: registry.ServiceRecord) -> None:
    folder = registry.private_folder(registry.services_dir())
    (folder / f"{record.pid}.json").write_text(record.model_dump_json(), encoding="utf-8")


def test_a_run_in_this_process_gives_way_to_a_service_starting_for_its_store(home: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GiveWay, "CHECK_EVERY_S", 0.0)
    db = str(tmp_path / "mine.db")
    serving = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # hippocampus serve, waiting for the store"])
    try:
        with Memory(milvus_uri=db) as memory:
            check = GiveWay.watch(memory)
            check()  # no service: the run goes on
            _write(_young_record(serving.pid, str(tmp_path / "another.db")))
            check()  # a service for another store: still on
            _write(_young_record(serving.pid, db))
            with pytest.raises(GiveWay) as way:
                check()
            assert way.value.pid == serving.pid
    finally:
        serving.kill()
        serving.wait(timeout=30)
    assert GiveWay.watch(object())() is None  # a Client: the run is already the service's


def test_consolidate_stops_between_two_steps_and_hands_the_rest_on(home: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The service starting here serves another collection of the store: the run gives way to it (it needs
    the store's lock), then, no service answering for its own collection, runs the rest here again."""
    monkeypatch.setattr(GiveWay, "CHECK_EVERY_S", 0.0)
    db = str(tmp_path / "cron.db")
    with Memory(milvus_uri=db) as memory:
        memory.add_many([{"text": f"{w} I adopted a grey cat named Miso {n}", "user_id": "dana"}
                         for n in range(4) for w in ("Today", "Yesterday")])
    serving = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # hippocampus serve, waiting"])
    try:
        _write(_young_record(serving.pid, db).model_copy(update={"collection": "another"}))
        result = CliRunner().invoke(app, ["--uri", db, "consolidate", "--json"])
    finally:
        serving.kill()
        serving.wait(timeout=30)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert f"a service is starting for this store (pid {serving.pid}); the rest of the run goes to it" in result.stderr
    assert json.loads(result.stdout)["examined"] > 0  # the rest of the run, done here again


def test_a_run_can_give_way_between_any_two_phases(home: Path, tmp_path: Path) -> None:
    """Every phase's start reaches the progress callback, so a run stops before supersede too (it reports no
    progress of its own: before, a run gave way only in the phases that did); the lease is let go."""
    started: list[str] = []

    def progress(phase: str, done: int, total: int) -> None:
        if (done, total) == (0, 0):
            started.append(phase)
        if phase == "supersede":
            raise GiveWay(os.getpid())

    with Memory(milvus_uri=str(tmp_path / "phases.db")) as memory:
        memory.add("I adopted a grey cat named Miso", user_id="dana", infer=False)
        with pytest.raises(GiveWay):
            memory.consolidate(progress=progress)
        assert started == ["episodes", "supersede"]
        assert memory.consolidate().examined == 1  # the run's lease was let go


def test_schedule_gives_way_as_consolidate_does(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hippocampus schedule`'s runs give way too; one run as the scheduler fires it (run_consolidation), the
    service starting for another collection of the store, so the rest runs here again."""
    from hippocampus.consolidation import schedule

    monkeypatch.setattr(GiveWay, "CHECK_EVERY_S", 0.0)
    monkeypatch.setattr(schedule, "run_forever", lambda factory, cron, *, user_id=None, report=None, **_: (
        schedule.run_consolidation(factory, user_id, report)))
    db = str(tmp_path / "sched.db")
    with Memory(milvus_uri=db) as memory:
        memory.add_many([{"text": f"{w} I adopted a grey cat named Miso {n}", "user_id": "dana"}
                         for n in range(2) for w in ("Today", "Yesterday")])
    serving = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # hippocampus serve, waiting"])
    try:
        _write(_young_record(serving.pid, db).model_copy(update={"collection": "another"}))
        result = CliRunner().invoke(app, ["--uri", db, "schedule", "--cron", "0 3 * * *"])
    finally:
        serving.kill()
        serving.wait(timeout=30)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert f"a service is starting for this store (pid {serving.pid}); the rest of the run goes to it" in result.stderr
    assert "consolidation finished (all users): examined 4" in result.stdout


def test_a_command_waits_for_a_starting_service_only_while_its_process_runs(home: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    starting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)  # hippocampus serve, opening"])
    told: list[int] = []
    try:
        _write(_young_record(starting.pid, db))
        assert registry.recorded_service(db, None, wait_s=0) is None and registry.services_dir().joinpath(f"{starting.pid}.json").exists()
        assert registry.recorded_service(db, None, wait_s=RUN_GUARD_S, waiting=lambda r: told.append(r.pid)) is None
        assert told == [starting.pid] and starting.poll() is not None  # waited until its process ended, not the bound
        assert list(registry.records()) == []  # then the record was stale, and went
    finally:
        starting.kill()
        starting.wait(timeout=30)


def _cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hippocampus", "--uri", db, *args], capture_output=True, text=True,
                          timeout=RUN_GUARD_S, env=os.environ.copy())


def test_a_service_killed_and_restarted_during_a_cron_loop_refuses_no_turn(home: Path, tmp_path: Path) -> None:
    db, port = str(tmp_path / "memories.db"), free_port()
    with Memory(milvus_uri=db) as memory:  # episodes for consolidation to merge and distil: each run takes a while
        memory.add_many([{"text": f"{w} I adopted a grey cat named Miso {n}", "user_id": "dana"}
                         for n in range(20) for w in ("Today", "Yesterday")])
    first = ServiceProcess(db, port, tmp_path / "serve-1.log")
    first.kill()  # kill -9: its record stays, naming a dead pid
    stop, runs = threading.Event(), []

    def cron() -> None:  # `hippocampus consolidate`, run after run, as cron would, without --server
        while not stop.is_set():
            runs.append(_cli(db, "consolidate", "--json"))

    loop = threading.Thread(target=cron)
    loop.start()
    try:
        while not runs and loop.is_alive():  # one run done: the next is under way when the service restarts
            stop.wait(0.1)
        restarted = ServiceProcess(db, port, tmp_path / "serve-2.log")  # raises if it exits (StoreLockedError)
        turns = [_cli(db, "add", f"turn {n}: we talked about the cat", "--user", "dana") for n in range(TURNS)]
        alive = restarted.proc.poll() is None
    finally:
        stop.set()
        loop.join(RUN_GUARD_S)
    try:
        refused = [t.stderr for t in turns if t.returncode != 0]
        assert refused == [], refused
        assert all("through the service" in t.stderr for t in turns), turns[0].stderr
        assert alive
        failed = [r.stderr for r in runs if r.returncode != 0]
        assert failed == [], failed
        assert all(isinstance(json.loads(r.stdout), dict) for r in runs)  # each run's statistics, wherever it ran
        log = (tmp_path / "serve-2.log").read_text(errors="replace")
        assert "StoreLockedError" not in log
    finally:
        assert restarted.stop()
    with Memory(milvus_uri=db) as reopened:
        assert sum(1 for r in reopened.get_all("dana") if r.text.startswith("turn ")) == TURNS
