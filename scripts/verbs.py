"""The one list of public verbs (hippocampus/contract/verbs.py) as a table: per verb its arguments and result,
read from Memory's signature, whether it writes, its errors, and its name on each face (or why a face leaves it out).
With --write it writes the faces generated from that list (Client and AsyncClient in hippocampus/remote/client.py,
AsyncMemory in hippocampus/memory/async_memory.py: hippocampus/contract/faces.py); --check says whether they are current.

    python scripts/verbs.py
    python scripts/verbs.py --write
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from hippocampus.contract import faces  # the kernel: no import of Memory, whose request verbs it may write first
from hippocampus.contract.verbs import table

ROOT = Path(__file__).resolve().parent.parent
_AGAIN = "HIPPOCAMPUS_VERBS_AGAIN"  # set in the process that renders the rest after memory/requested.py is written


def rendered() -> dict[str, str]:
    """The generated faces as they should read now (importing Memory: memory/requested.py must be current)."""
    from hippocampus.memory.async_base import (
        AsyncMemoryBase,  # (the facade registers the class whose signatures are read)
    )
    from hippocampus.remote.calls import _Requests
    from hippocampus.remote.transport import AsyncTransport, SyncTransport

    return faces.render(_Requests, SyncTransport, AsyncTransport, AsyncMemoryBase)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the generated faces")
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated face is stale")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        import hippocampus.memory  # noqa: F401  (registers Memory, whose signatures the table reads)

        print(table())
        return 0
    if args.write and faces.stale({faces.REQUESTED_PATH: faces.render_requested()}, ROOT) and not os.environ.get(_AGAIN):
        # Memory's request verbs first: the Client and AsyncMemory are read from Memory's signatures, so they are
        # rendered by a fresh process that imports the file just written.
        (ROOT / faces.REQUESTED_PATH).write_text(faces.render_requested(), encoding="utf-8")
        print(f"wrote {faces.REQUESTED_PATH}")
        return subprocess.run([sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])],
                              env={**os.environ, _AGAIN: "1"}, check=False).returncode
    texts = rendered()
    old = faces.stale(texts, ROOT)
    if args.write:
        for path in old:
            (ROOT / path).write_text(texts[path], encoding="utf-8")
        print("\n".join(f"wrote {p}" for p in old) or "the generated faces are current")
        return 0
    print("\n".join(f"stale: {p} (run {faces.COMMAND})" for p in old) or "the generated faces are current")
    return 1 if old else 0


if __name__ == "__main__":
    raise SystemExit(main())
