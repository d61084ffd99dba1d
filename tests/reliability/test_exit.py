"""A process that never calls close() still ends, and leaves its store whole for the next one (issue 56):
the script's end, an uncaught exception, Ctrl-C (SIGINT) and SIGTERM while idle after an add, and the mem0
drop-in's script end. A child (_exit_child.py) adds and searches in English and Chinese; the parent gives
it a deadline (only to turn a hang into a failure, never to time it), then opens the store itself: every
memory is there, each with its cross vector (written in the add's own call, store/xvector.py)."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hippocampus import Memory

from ._exit_child import MEM0_TEXT, TEXTS

CHILD = Path(__file__).with_name("_exit_child.py")
HANG_GUARD_S = 60  # only to turn a hang into a failure; never asserts speed
# way -> (the child's mode, the signal sent once it said "added", the exit statuses expected)
WAYS = {
    "end": ("end", None, {0}),
    "uncaught exception": ("raise", None, {1}),
    "SIGINT": ("wait", signal.SIGINT, {1, -signal.SIGINT}),  # an uncaught KeyboardInterrupt: 1, or the signal itself
    "SIGTERM": ("wait", signal.SIGTERM, {-signal.SIGTERM}),
    "mem0 end": ("mem0", None, {0}),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_a_process_that_never_closes_ends_and_leaves_the_store_whole(tmp_path: Path, embedder, way: str) -> None:
    mode, sig, status = WAYS[way]
    path = str(tmp_path / "exit.db")
    child = subprocess.Popen([sys.executable, str(CHILD), mode, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if sig is not None:
            assert select.select([child.stdout], [], [], HANG_GUARD_S)[0], "the child never said 'added'"
            assert child.stdout is not None and child.stdout.readline().strip() == "added"
            child.send_signal(sig)
        out, err = child.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"the child did not end ({way}): {err[-2000:]}")
    assert child.returncode in status, err[-2000:]
    assert sig is not None or out.strip() == "added"
    assert "cannot schedule new futures" not in err, err[-2000:]

    with Memory(milvus_uri=path, embedder=embedder) as memory:  # the next process opens the store
        assert sorted(r.text for r in memory.get_all("alice")) == sorted([MEM0_TEXT] if mode == "mem0" else TEXTS)
        assert memory.stats()["without_cross_vector"] == 0
