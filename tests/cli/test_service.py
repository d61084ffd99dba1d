"""A service is findable (issue 31, case 10): `hippocampus serve` (which connect() starts) records
itself under HIPPOCAMPUS_HOME/services; a CLI command on its store goes through it (issue 41), one that
finds the store locked otherwise names it and says to use --server; `service status` lists it and `service stop` stops it. A busy port is one line,
before the store is opened.

Before: after connect() the CLI failed with a StoreLockedError that suggested nothing, the README
never said how to stop the service, and a second `serve` on a busy port opened the store, logged
"serving on ..." and then failed with Errno 98 in 15 lines of log."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import hippocampus
from hippocampus.cli import service
from hippocampus.cli.app import app
from tests.service_support import free_port

runner = CliRunner(env={"COLUMNS": "200"})


def invoke(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def test_a_service_started_by_connect_is_named_used_and_stopped(home: Path, tmp_path: Path):
    db, port = str(tmp_path / "svc.db"), free_port()
    url = f"http://127.0.0.1:{port}"
    with hippocampus.connect(url, milvus_uri=db) as client:
        client.add("I moved to Berlin in May", user_id="alice")
    try:
        [record] = json.loads(invoke("service", "status", "--json").stdout)
        assert (record["url"], record["store"], record["alive"], record["state"]) == (url, db, True, "running")
        assert "secret" not in record  # proved by the service, never shown
        pid = record["pid"]
        # the record names the store, the log what the service did: its user's alone (issue 57)
        folder = home / "services"
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {f"{pid}.json": 0o600, "serve.log": 0o600}

        # without --server a command goes through the service that holds the store, and says so (issue 41)
        routed = invoke("--uri", db, "list", "-u", "alice")
        assert "Berlin" in routed.stdout
        assert routed.stderr.strip().splitlines() == [f"note: through the service at {url} (pid {pid}), which holds this store"]
        # another collection of that store: not the service's, so the lock is met, and the line names the service
        locked = invoke("--uri", db, "--collection", "other", "list", "-u", "alice", code=1)
        assert locked.stderr.strip().splitlines() == [
            f"error: StoreLockedError: a service at {url} (pid {pid}) holds this store: add --server {url}, "
            "or `hippocampus service stop`"]
        assert "Berlin" in invoke("--server", url, "list", "-u", "alice").stdout  # what the line says works

        stopped = json.loads(invoke("--uri", db, "service", "stop", "--json").stdout)
        assert stopped["stopped"] == [pid] and stopped["still_running"] == []
        assert not service.alive(pid) and json.loads(invoke("service", "status", "--json").stdout) == []
        log = (home / "services" / "serve.log").read_text(errors="replace")
        assert "store closed" in log  # SIGTERM: the graceful path
        assert "faiss" not in log  # milvus-lite's faiss loader listed the CPU builds it could not load (case 15)
        rows = json.loads(invoke("--uri", db, "list", "-u", "alice", "--json").stdout)  # the store is free again
        assert [r["text"] for r in rows] == ["I moved to Berlin in May"]
    finally:
        for r in service.records():
            if service.alive(r.pid):
                os.kill(r.pid, signal.SIGKILL)


def test_a_busy_port_is_one_line_before_the_store_opens(home: Path, tmp_path: Path):
    db = tmp_path / "busy.db"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = invoke("--uri", str(db), "serve", "--port", str(port), "--no-mcp", code=2)
    assert result.stderr.strip().splitlines() == [
        f"error: ConfigError: port {port} on 127.0.0.1 is in use (another service? `hippocampus service status` "
        "lists the ones started here); choose another --port"]
    assert not db.exists() and list(service.records()) == []  # no store opened, no record left behind


def test_sigterm_removes_the_record_and_keeps_its_exit_status(home: Path):
    """What uvicorn does after its graceful shutdown (re-raise SIGTERM), on `serving` alone."""
    code = ("import time; from hippocampus.cli.service import serving; "
            "serving('0.0.0.0', 9, 'x.db', None, lambda secret: (print('up', flush=True), time.sleep(60)))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        [record] = service.records()
        assert record.pid == proc.pid and record.url == "http://127.0.0.1:9" and service.alive(proc.pid)
        assert record.store == str(Path("x.db").absolute())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
    assert list(service.records()) == []


def test_a_dead_record_is_shown_dead_and_removed_by_stop(home: Path, tmp_path: Path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(gone.stdout)
    folder = home / "services"
    folder.mkdir(parents=True)
    dead = {"url": "http://127.0.0.1:9", "pid": pid, "store": str(tmp_path / "old.db"), "started_at": "2026-01-01T00:00:00+00:00"}
    (folder / f"{pid}.json").write_text(json.dumps(dead))
    (folder / "garbage.json").write_text("{not json")
    [row] = json.loads(invoke("service", "status", "--json").stdout)
    assert row["pid"] == pid and row["alive"] is False
    assert "stale" in invoke("service", "status").stdout
    out = json.loads(invoke("service", "stop", "--uri", str(tmp_path / "old.db"), "--json").stdout)
    assert out["stale_records_removed"] == [pid] and out["stopped"] == []
    assert list(service.records()) == []
    nothing = invoke("service", "stop", "--uri", str(tmp_path / "other.db"))
    assert nothing.stdout.strip() == f"no recorded service holds {tmp_path / 'other.db'}"


def test_records_and_the_log_are_private_even_in_an_older_open_folder(home: Path, tmp_path: Path):
    """A services folder an older release made 0755 is tightened; a record is written 0600 whatever the
    umask (issue 57: the record names the store's path)."""
    from hippocampus.cli import registry
    from hippocampus.remote.launcher import log_file

    (home / "services").mkdir(parents=True)
    os.chmod(home / "services", 0o755)
    old = os.umask(0o022)
    try:
        record = registry.register("127.0.0.1", 9, str(tmp_path / "x.db"), None)
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE((home / "services").stat().st_mode) == 0o700
        assert stat.S_IMODE((home / "services" / f"{record.pid}.json").stat().st_mode) == 0o600
    finally:
        registry.unregister(record.pid)
    os.chmod(home / "services", 0o755)
    assert log_file() == home / "services" / "serve.log" and stat.S_IMODE((home / "services").stat().st_mode) == 0o700

