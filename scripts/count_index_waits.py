"""How often the tests wait for a new Milvus index (pymilvus's wait), per test file: a pytest plugin
and a table. Each wait slept at least 0.5 s before tests/conftest.py made it look quickly first, so
the count prices what that saved. Counts, never times.

    COUNT_INDEX_WAITS=/tmp/waits.jsonl python -m pytest -p scripts.count_index_waits -n 1 tests/memory
    python scripts/count_index_waits.py /tmp/waits.jsonl
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ENV = "COUNT_INDEX_WAITS"
SLEPT_S = 0.5  # pymilvus slept this long before its first look at a new index
_waits: Counter[str] = Counter()


def _count_waits() -> None:
    from pymilvus.client.grpc_handler import GrpcHandler  # noqa: PLC0415 - only when the plugin runs

    wait = GrpcHandler.wait_for_creating_index
    if getattr(wait, "counted", False):
        return

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        _waits["now"] += 1
        return wait(self, *args, **kwargs)

    counted.counted = True  # type: ignore[attr-defined]
    GrpcHandler.wait_for_creating_index = counted


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Around each test where it runs (a worker, under xdist): one line, its file and the waits it made."""
    _count_waits()  # after conftest.py has loaded
    before = _waits["now"]
    yield
    out = os.environ.get(ENV)
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"file": item.nodeid.split("::")[0], "waits": _waits["now"] - before}) + "\n")


def table(lines: list[dict[str, Any]]) -> str:
    """Tests and waits per file, most waits first, and the sleep they cost at SLEPT_S each."""
    tests: dict[str, int] = defaultdict(int)
    waits: dict[str, int] = defaultdict(int)
    for line in lines:
        tests[line["file"]] += 1
        waits[line["file"]] += line["waits"]
    rows = ["| file | tests | index waits | slept before (s) |", "|---|---|---|---|"]
    for name in sorted(waits, key=lambda n: (-waits[n], n)):
        rows.append(f"| {name} | {tests[name]} | {waits[name]} | {waits[name] * SLEPT_S:.1f} |")
    total = sum(waits.values())
    rows.append(f"| all | {sum(tests.values())} | {total} | {total * SLEPT_S:.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    paths = argv if argv is not None else sys.argv[1:]
    if not paths:
        print(__doc__)
        return 2
    lines = [json.loads(x) for p in paths for x in Path(p).read_text(encoding="utf-8").splitlines() if x.strip()]
    print(table(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
