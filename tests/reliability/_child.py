"""Subprocess side of the crash and lock tests (run as a script, never collected by pytest).

    python _child.py add-loop PATH N PREFIX   add N memories, printing "ack <id> <text>" after each one returns
    python _child.py open PATH                open the store: prints "opened", or "error <Type> <message>" (exit 3)
    python _child.py hold PATH                open, print "ready", close on the stdin line "close", exit on "exit"

Lines are flushed at once so the parent knows exactly what was acknowledged before it sent SIGKILL.
"""

from __future__ import annotations

import os
import sys
import tempfile


def _memory(path: str):
    os.environ.setdefault("HIPPOCAMPUS_HOME", tempfile.mkdtemp())
    from hippocampus import Memory

    return Memory(milvus_uri=path)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def add_loop(path: str, n: int, prefix: str) -> None:
    memory = _memory(path)
    _say("ready")
    for i in range(n):
        text = f"{prefix} memory number {i}"
        ids = memory.add(text, user_id="crash-user", chat_id=prefix, ts=1_700_000_000 + i).ids
        _say(f"ack {ids[0]} {text}")
    memory.close()
    _say("done")


def open_once(path: str) -> int:
    try:
        memory = _memory(path)
    except Exception as exc:  # report the type so the parent can assert on it
        _say(f"error {type(exc).__name__} {exc}")
        return 3
    _say(f"opened {memory.stats()['total']}")
    memory.close()
    return 0


def hold(path: str) -> None:
    memory = _memory(path)
    _say("ready")
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "close":
            memory.close()
            _say("closed")
        elif cmd == "exit":
            return


def main(argv: list[str]) -> int:
    mode, path = argv[0], argv[1]
    if mode == "add-loop":
        add_loop(path, int(argv[2]), argv[3])
    elif mode == "open":
        return open_once(path)
    elif mode == "hold":
        hold(path)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
