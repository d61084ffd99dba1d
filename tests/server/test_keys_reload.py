"""Issue 42: keys re-read on SIGHUP. A real `hippocampus serve` process with a keys file: a key
removed from the file and the process sent SIGHUP is refused from then on (its Web UI session ends
too), a key added works, and requests with a key that stays never fail meanwhile. A file that does
not load, or one with no keys left, keeps the keys in force. Before, SIGHUP ended the service."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.service_support import START_GUARD_S, ServiceProcess, free_port

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")


def _write(path: Path, keys: dict[str, str]) -> None:
    rows = "".join(f'  - name: {user}\n    key: "{key}"\n    users: [{user}]\n' for user, key in keys.items())
    path.write_text("keys:\n" + rows if keys else "keys: []\n")
    path.chmod(0o600)


def _status(url: str, key: str, user: str) -> int:
    return httpx.get(f"{url}/v1/memories", params={"user_id": user}, headers={"Authorization": f"Bearer {key}"},
                     timeout=30).status_code


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + START_GUARD_S  # turns a hang into a failure; never asserts speed
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


class _Steady(threading.Thread):
    """alice's client asking again and again over one keep-alive connection while keys change."""

    def __init__(self, url: str, key: str):
        super().__init__(daemon=True)
        self.url, self.key, self.stop = url, key, threading.Event()
        self.codes: list[int] = []
        self.errors: list[str] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=30) as client:
            while not self.stop.is_set():
                try:
                    self.codes.append(client.get("/v1/memories", params={"user_id": "alice"}).status_code)
                except httpx.HTTPError as exc:
                    self.errors.append(repr(exc))


def test_sighup_rereads_the_keys_without_dropping_requests(tmp_path):
    alice, bob, carol = (secrets.token_urlsafe(32) for _ in range(3))
    keys = tmp_path / "keys.yaml"
    _write(keys, {"alice": alice, "bob": bob})
    log = tmp_path / "serve.log"
    service = ServiceProcess(str(tmp_path / "m.db"), free_port(), log, "--keys-file", str(keys),
                             env={"HIPPOCAMPUS_API_KEY": "", "HIPPOCAMPUS_API_KEYS": "", "HIPPOCAMPUS_KEYS_FILE": ""})
    url = service.url
    steady = _Steady(url, alice)
    try:
        login = httpx.post(f"{url}/ui/login", data={"key": bob, "bind": "bobs-browser"}, headers={"Origin": url})
        bobs_cookie = {"Cookie": login.headers["set-cookie"].split(";")[0]}
        assert httpx.get(f"{url}/ui/users/bob/memories", headers=bobs_cookie).status_code == 200
        assert _status(url, bob, "bob") == 200 and _status(url, carol, "carol") == 401
        steady.start()
        _until(lambda: len(steady.codes) >= 3, "alice's client is asking")

        _write(keys, {"alice": alice, "carol": carol})  # bob revoked, carol added
        os.kill(service.proc.pid, signal.SIGHUP)
        _until(lambda: _status(url, carol, "carol") == 200, f"carol's new key works:\n{log.read_text()[-1500:]}")
        assert _status(url, bob, "bob") == 401
        answer = httpx.get(f"{url}/ui/users/bob/memories", headers=bobs_cookie)
        assert answer.status_code == 303 and answer.headers["location"] == "/ui/login", "bob's UI session ended"

        keys.write_text("keys: [\n")  # a half-written file keeps the keys in force
        os.kill(service.proc.pid, signal.SIGHUP)
        _until(lambda: "keys not reloaded" in log.read_text(), "the broken file is reported")
        _write(keys, {})  # no keys left: a reload never opens a keyed service
        os.kill(service.proc.pid, signal.SIGHUP)
        _until(lambda: "no keys left" in log.read_text(), "the empty file is reported")
        assert _status(url, carol, "carol") == 200 and _status(url, bob, "bob") == 401
        assert httpx.get(f"{url}/v1/memories", params={"user_id": "alice"}).status_code == 401
        codes_during = len(steady.codes)
        _until(lambda: len(steady.codes) > codes_during, "alice's client still answered")
    finally:
        steady.stop.set()
        steady.join(timeout=60)
        service.stop()
    assert service.proc.returncode == -signal.SIGTERM, "the service lived through every SIGHUP"
    assert steady.errors == [] and set(steady.codes) == {200}, (steady.errors[:3], sorted(set(steady.codes)))
    text = log.read_text()
    assert "keys reloaded: 2 key(s) (were 2); 1 Web UI session(s) of removed keys ended" in text
    assert alice not in text and carol not in text, "no key in the log"


def test_a_sighup_while_the_store_opens_is_held_not_fatal(tmp_path):
    """Issue 57: the handler was installed after the store opened, so a SIGHUP in the first seconds (a
    deploy script's `kill -HUP` right after a start) ended `serve`. Sent the moment `serve` logs its
    deployment line (before it reads the keys and opens the store), the SIGHUP is held, the service
    starts, and it reloads its keys once then."""
    alice = secrets.token_urlsafe(32)
    keys = tmp_path / "keys.yaml"
    _write(keys, {"alice": alice})
    log = tmp_path / "serve.log"
    port = free_port()
    command = [sys.executable, "-m", "hippocampus", "--uri", str(tmp_path / "m.db"), "serve", "--port", str(port),
               "--no-mcp", "--log-level", "info", "--keys-file", str(keys)]
    env = {**os.environ, "HIPPOCAMPUS_API_KEY": "", "HIPPOCAMPUS_API_KEYS": "", "HIPPOCAMPUS_KEYS_FILE": ""}
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    try:
        _until(lambda: "running alone" in log.read_text() or proc.poll() is not None, "serve logs its deployment line")
        os.kill(proc.pid, signal.SIGHUP)
        _until(lambda: "keys reloaded" in log.read_text() or proc.poll() is not None, "the held SIGHUP reloads")
        assert proc.poll() is None, f"serve ended:\n{log.read_text()[-1500:]}"
        _until(lambda: _healthy(port), "the service answers")
        assert _status(f"http://127.0.0.1:{port}", alice, "alice") == 200
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGTERM


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False
