"""The service as its own process on the embedded default store: a chat hook and the cron line
(`hippocampus --server URL consolidate`) run at once and no turn is lost; kill -9 or SIGTERM during a
burst of writes loses no acknowledged write and duplicates none (SIGTERM also closes the store);
connect() starts a service when none answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from hippocampus import Client, HistoryAction, Memory, NotFound
from tests.service_support import ServiceProcess, free_port

TURNS = [  # repeats (one memory, its use counted) and rewordings (two memories that consolidation merges)
    "hi there!", "I adopted a grey cat named Miso today", "Today I adopted a grey cat named Miso",
    "我下周三要去上海出差", "thanks", "My brother Tom is getting married in June", "我下周三要去上海出差",
    "what is the capital of France?", "I started learning the piano last month", "Last month I started learning the piano",
]


UNIQUE = ["I ran 5 km along the river this morning", "My daughter lost her first tooth", "我们把厨房刷成了蓝色"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    return tmp_path


def _account(client: Client, user: str, acked: list[tuple[str, object]]) -> Counter:
    """Every turn is stored, merged into a memory that names it as a source, recognised as one already
    stored (its use counted), or skipped by a decision."""
    fate: Counter = Counter()
    for text, result in acked:
        if not result.stored:
            assert result.reason, f"{text!r} skipped without a recorded decision"
            fate["repeated" if result.ids else "skipped"] += 1
            continue
        for mid in result.ids:
            try:
                client.get(mid, user)
                fate["stored"] += 1
                continue
            except NotFound:
                pass
            fate["merged"] += 1
            hop = mid
            for _ in range(len(acked)):  # follow merge after merge to the memory that holds it now
                merged = [e for e in client.history(hop, user) if e.action is HistoryAction.MERGED and "merged_into" in e.details]
                assert merged, f"memory {hop} ({text!r}) is gone without a merge"
                into = merged[-1].details["merged_into"]
                made = [e for e in client.history(into, user) if e.action is HistoryAction.MERGED and "merged_from_ids" in e.details]
                assert hop in made[0].details["merged_from_ids"]
                try:
                    client.get(into, user)
                    break
                except NotFound:
                    hop = into
            else:
                raise AssertionError(f"{text!r}: no live memory at the end of its merges")
    return fate


def test_chat_hook_and_cron_line_share_the_embedded_store(home: Path):
    service = ServiceProcess(str(home / "memories.db"), free_port(), home / "serve.log")
    acked: list[tuple[str, object]] = []
    errors: list[BaseException] = []

    def chat_hook() -> None:
        try:
            with Client(service.url) as memory:
                for round_ in range(3):
                    for n, turn in enumerate(TURNS + [UNIQUE[round_]]):
                        memory.search(turn, user_id="dana")
                        acked.append((turn, memory.add(turn, user_id="dana", chat_id=f"chat-{round_}", infer=True,
                                                       ts=1_760_000_000 + round_ * 100_000 + n * 60)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    hook = threading.Thread(target=chat_hook)
    try:
        hook.start()
        cron_runs = []
        while hook.is_alive() or not cron_runs:  # the cron line, as a separate process, while the hook runs
            line = subprocess.run([sys.executable, "-m", "hippocampus", "--server", service.url, "consolidate", "--json"],
                                  capture_output=True, text=True, timeout=300, env=os.environ.copy())
            assert line.returncode == 0, line.stderr
            cron_runs.append(json.loads(line.stdout))
        hook.join()
        assert errors == []
        final = subprocess.run([sys.executable, "-m", "hippocampus", "--server", service.url, "consolidate", "--json"],
                               capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr
        with Client(service.url) as client:
            fate = _account(client, "dana", acked)
            stats = client.stats()
        assert sum(fate.values()) == len(acked) == 3 * (len(TURNS) + 1)
        assert fate["stored"] and fate["skipped"] and fate["merged"] and fate["repeated"], fate  # every path was taken
        assert all(r["outcome"] == "ok" for r in stats["service"]["consolidation"]["runs"])
    finally:
        hook.join(timeout=300)
        assert service.stop()  # SIGTERM: graceful, the store closed
    with Memory(milvus_uri=str(home / "memories.db")) as reopened:  # the store was released
        assert reopened.stats("dana")["total"] >= fate["stored"]


@pytest.mark.parametrize("how", ["kill -9", "SIGTERM"])
def test_a_kill_during_a_write_burst_loses_no_acknowledged_write(home: Path, how: str):
    db, port = str(home / "memories.db"), free_port()
    service = ServiceProcess(db, port, home / "serve.log")
    acked: list[str] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        with Client(service.url, timeout=30) as memory:
            for i in range(10_000):
                text = f"writer {w} burst line {i}"
                try:
                    memory.add(text, user_id="burst", chat_id=f"w{w}")
                except Exception:  # the kill: the answer never came, so this write is not acknowledged
                    return
                with lock:
                    acked.append(text)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in writers:
        t.start()
    deadline = time.monotonic() + 120
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    if how == "kill -9":
        service.kill()  # mid-burst, no chance to finish anything
    else:
        assert service.stop()  # graceful: requests in flight finish, then the store is closed
    for t in writers:
        t.join(timeout=60)
    assert len(acked) >= 40
    restarted = ServiceProcess(db, port, home / "serve.log")
    try:
        with Client(restarted.url) as client:
            texts = Counter(r.text for r in client.get_all("burst"))
    finally:
        restarted.stop()
    assert not [t for t in acked if texts[t] != 1], "an acknowledged write is missing or duplicated"
    assert max(texts.values()) == 1  # unacknowledged writes may or may not be there, never twice


def test_connect_starts_a_service_when_none_answers(home: Path):
    import signal

    from hippocampus import ServiceUnavailable, connect

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServiceUnavailable):
        connect(url, start=False)
    client = connect(url, milvus_uri=str(home / "started.db"))
    try:
        mid = client.add("started on demand", user_id="eve").ids[0]
        assert client.get(mid, "eve").text == "started on demand"
        again = connect(url)  # the running one is reused, not started twice
        assert again.stats()["store"] == str(home / "started.db")
        again.close()
    finally:
        client.close()
        pids = subprocess.run(["pgrep", "-f", "--", f"serve --host 127.0.0.1 --port {url.rsplit(':', 1)[1]}"], capture_output=True, text=True).stdout.split()
        for pid in pids:
            os.kill(int(pid), signal.SIGTERM)
    assert len(pids) == 1  # one background service was started, and it is stopped now
