"""The decay step in the service (issue 14, item 3; seed 003's "decay at start when the last pass
is over 24 h old"): the time of the last pass over every user lives in the store, so a restarted
service catches up once and a fresh one does not decay again; the step has its own schedule."""

from __future__ import annotations

import pytest

from hippocampus import InvalidInput, Memory
from hippocampus.models import State, now_ts, simulated_clock
from hippocampus.server import create_app
from hippocampus.server.jobs import Consolidations
from hippocampus.server.metrics import ServiceMetrics
from tests.service_support import in_process

DAY = 86400


def _start(memory: Memory) -> list[dict]:
    """Serve with decay_at_start, wait for the start check, return the service's recorded runs."""
    app = create_app(memory, mcp=False, close_memory=False, decay_at_start=True)
    with in_process(app):  # the app's start-up, as under uvicorn: no request is needed
        for thread in app.state.consolidations._starters:
            thread.join(timeout=120)
        return list(app.state.consolidations.runs)


def test_a_service_decays_at_start_when_the_last_pass_is_over_a_day_old_and_only_then(memory: Memory):
    then = now_ts() - 200 * DAY
    with simulated_clock(lambda: then):
        stale = memory.add("We had a picnic by the river", user_id="u").ids[0]
    assert memory.last_decay() is None
    runs = _start(memory)
    assert [(r["trigger"], r["outcome"]) for r in runs] == [("decay-start", "ok")]
    assert runs[0]["stats"]["archived"] == 1 and memory.get(stale, "u").life.state is State.ARCHIVED
    assert now_ts() - 60 <= memory.last_decay() <= now_ts()
    assert _start(memory) == []  # decayed minutes ago: nothing at this start


def test_only_a_pass_over_every_user_counts_and_one_mark_is_kept(memory: Memory):
    memory.decay("u")
    assert memory.last_decay() is None  # one user's pass is not the nightly pass
    memory.decay(now=now_ts() - 2 * DAY)
    memory.decay()
    assert now_ts() - 60 <= memory.last_decay()
    marks = memory.store.history('action == "decay_run"')
    assert len(marks) == 1 and marks[0]["user_id"] == ""


def test_the_decay_schedule_refuses_a_bad_cron_and_runs_on_a_good_one(memory: Memory):
    jobs = Consolidations(memory, ServiceMetrics(lambda: memory.stats()))
    with pytest.raises(InvalidInput):
        jobs.schedule_decay("every night")
    try:
        jobs.schedule_decay("30 * * * *")
        assert jobs.scheduler is not None and jobs.scheduler.get_job("hippocampus-decay") is not None
        assert jobs.decay("manual").examined == 0 and jobs.runs[-1]["step"] == "decay"
    finally:
        jobs.shutdown()
