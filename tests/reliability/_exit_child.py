"""Subprocess side of test_exit.py (run as a script, never collected by pytest): open the store at PATH,
search and add (an add last) without ever calling close(), say "added", then end the way WAY says.

    python _exit_child.py WAY PATH    WAY: end (the script's end), raise (an uncaught exception),
                                      wait (sleep until the parent's signal), mem0 (the mem0 drop-in, then its end)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

TEXTS = ["I moved to Berlin in May", "我的女儿在学钢琴，每周六上课。"]
MEM0_TEXT = "I prefer window seats"


def main(way: str, path: str) -> None:
    os.environ.setdefault("HIPPOCAMPUS_HOME", tempfile.mkdtemp())
    if way == "mem0":
        from hippocampus.compat.mem0 import Memory as Mem0

        m0 = Mem0(milvus_uri=path)
        m0.search("where do I like to sit?", filters={"user_id": "alice"})
        m0.add(MEM0_TEXT, user_id="alice", infer=False)
    else:
        from hippocampus import Memory

        memory = Memory(milvus_uri=path)
        memory.add(TEXTS[0], user_id="alice", infer=False)
        for question in ("Where do I live?", "我住在哪里？", "我女儿学什么？"):  # cross-language searches too
            memory.search(question, user_id="alice")
        memory.add(TEXTS[1], user_id="alice", infer=False)  # the last step an add: nothing read after it
    sys.stdout.write("added\n")
    sys.stdout.flush()
    if way == "raise":
        raise RuntimeError("an error nobody caught")
    if way == "wait":
        time.sleep(300)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
