"""The service's OpenAPI schema, written without serving: what clients in other languages are generated from.

`python -m hippocampus.server.openapi [PATH]` prints (or writes to PATH) the schema of the very app
`hippocampus serve` builds (create_app), around a Memory on a throwaway store, so the file equals what a
running service answers at /openapi.json. clients/typescript's `npm run generate` runs it; the JSON is
indented, key order kept (routes in declaration order), ASCII only and newline-terminated, so a diff of two
exports shows only what changed.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def schema() -> dict[str, Any]:
    """The OpenAPI document of `create_app`, built over a Memory on a temporary store (nothing is served)."""
    from ..memory import Memory  # noqa: PLC0415 - loads the library only when asked
    from .app import create_app  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="hippocampus-openapi-") as folder:
        memory = Memory(milvus_uri=str(Path(folder) / "memories.db"))
        try:
            return create_app(memory, close_memory=False, mcp=False, ui=False).openapi()
        finally:
            memory.close()


def dumps(document: dict[str, Any]) -> str:
    """The file's text: stable for equal schemas."""
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python -m hippocampus.server.openapi [PATH]  (prints to stdout without PATH)", file=sys.stderr)
        return 2
    text = dumps(schema())
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
