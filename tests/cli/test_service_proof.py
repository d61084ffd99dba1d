"""Liveness is the service answering, not a pid (issue 57): `serve` records a random secret (file 0600), and
a record counts while the service at its URL proves, at /healthz, that it holds that secret and is that pid
(contract/liveness.py). A record whose pid runs but whose service does not prove itself (a pid reused by
another program, another server on the port, a stuck service) is stale: `service stop` removes it and
signals nobody; a command on its store does not go through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from typer.testing import CliRunner

from hippocampus.cli import registry
from hippocampus.cli.app import app
from hippocampus.contract import liveness
from hippocampus.server import KeyRing, create_app
from tests.service_support import served

runner = CliRunner(env={"COLUMNS": "200"})


def _record(url: str, pid: int, store: str, secret: str | None, started_at: str = "2026-01-01T00:00:00+00:00"):
    return registry.ServiceRecord(url=url, pid=pid, store=store, started_at=started_at, secret=secret)


def test_only_the_service_holding_the_secret_proves_itself(memory, home: Path):
    app = create_app(memory, KeyRing.load(env={}), mcp=False, ui=False, close_memory=False, service_secret="s3cret-of-record")
    with served(app) as url:
        me = os.getpid()  # the service runs in this process
        assert registry.proves(_record(url, me, "x", "s3cret-of-record"))
        assert not registry.proves(_record(url, me, "x", "another-secret"))  # another service's record
        assert not registry.proves(_record(url, me + 1, "x", "s3cret-of-record"))  # the record of another pid
        assert not registry.proves(_record(url, me, "x", None))  # a record that proves nothing
    assert not registry.proves(_record(url, me, "x", "s3cret-of-record"))  # nothing listens any more
    assert liveness.answers("s", "x" * (liveness.MAX_CHALLENGE + 1), 1) is None


def test_a_record_whose_service_does_not_prove_itself_is_stale_and_nobody_is_signalled(home: Path, tmp_path: Path, memory):
    """A running program that looks like ours (its command line says hippocampus) holds the record's pid, and
    a server that answers /healthz without proof holds its port: before, `service stop` sent it SIGTERM."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # not hippocampus's service"])
    imposter = create_app(memory, KeyRing.load(env={}), mcp=False, ui=False, close_memory=False)  # no secret: no proof
    store = str(tmp_path / "old.db")
    try:
        with served(imposter) as url:
            folder = registry.private_folder(home / "services")
            record = _record(url, bystander.pid, store, "the-record-secret")
            (folder / f"{bystander.pid}.json").write_text(record.model_dump_json(), encoding="utf-8")
            assert registry.alive(bystander.pid)  # the old check took it for our service
            assert registry.state(record) == "stale"
            [row] = json.loads(runner.invoke(app, ["service", "status", "--json"]).stdout)
            assert (row["state"], row["alive"]) == ("stale", False) and "secret" not in row
            assert registry.recorded_service(store, None) is None  # a command on the store does not go through it
            (folder / f"{bystander.pid}.json").write_text(record.model_dump_json(), encoding="utf-8")
            result = runner.invoke(app, ["service", "stop", "--uri", store, "--json"])
            assert result.exit_code == 0, (result.stdout, result.stderr)
            out = json.loads(result.stdout)
            assert out["stale_records_removed"] == [bystander.pid] and out["stopped"] == []
            assert list(registry.records()) == []
        time.sleep(0.2)
        assert bystander.poll() is None, "the bystander was signalled"
    finally:
        bystander.kill()
        bystander.wait(timeout=30)


def test_a_young_record_of_a_running_process_is_a_service_starting(home: Path, tmp_path: Path):
    """A service writes its record before its store opens: until it answers, it is starting, not stale."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # hippocampus serve, opening"])
    try:
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        young = _record("http://127.0.0.1:9", process.pid, str(tmp_path / "s.db"), "secret", started_at=now)
        assert registry.state(young) == "starting"
        assert registry.state(young.model_copy(update={"started_at": "2026-01-01T00:00:00+00:00"})) == "stale"
    finally:
        process.kill()
        process.wait(timeout=30)
    assert registry.state(young) == "stale"  # its process is gone
