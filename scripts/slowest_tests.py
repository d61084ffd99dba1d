"""The suite's slowest tests, as a table: what to look at first when `.ci/run` grows.

    python scripts/slowest_tests.py                 # the whole suite, as the README runs it
    python scripts/slowest_tests.py -n 30 tests/server -- -x   # a folder; arguments after -- go to pytest
    python scripts/slowest_tests.py --by-file --at c2f4d1e tests/server/test_server_rest.py -- -n 1
        # the same tests at an earlier commit (git archive into a temporary folder): a before/after pair

Runs pytest once with a JUnit XML report (each test's time is setup + call + teardown) and prints
the N slowest tests (with --by-file, the N slowest test files), the time per top-level test folder,
and the run's wall-clock time. The tests themselves never time anything; this script only reads what
pytest measured.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def read_report(path: Path) -> list[tuple[str, float, str]]:
    """(test id, seconds, outcome) for every test case of a JUnit XML report."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        classname = case.get("classname", "")
        name = f"{classname.replace('.', '/')}.py::{case.get('name')}" if classname else str(case.get("name"))
        rows.append((name, float(case.get("time") or 0.0), outcome))
    return rows


def folder_of(test_id: str) -> str:
    parts = test_id.split("::")[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def by_file(rows: list[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    """One row per test file: its tests' seconds summed; the outcome says how many tests and failures."""
    secs: dict[str, float] = defaultdict(float)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, t, outcome in rows:
        path = name.split("::")[0]
        secs[path] += t
        counts[path][0] += 1
        counts[path][1] += outcome in ("failure", "error")
    return [(path, secs[path], f"{n} tests, {bad} failed") for path, (n, bad) in counts.items()]


def table(rows: list[tuple[str, float, str]], top: int, files: bool = False) -> str:
    lines = [f"| # | seconds | outcome | {'file' if files else 'test'} |", "|---|---|---|---|"]
    for n, (name, secs, outcome) in enumerate(sorted(by_file(rows) if files else rows, key=lambda r: -r[1])[:top], 1):
        lines.append(f"| {n} | {secs:.1f} | {outcome} | {name} |")
    by_folder: dict[str, float] = defaultdict(float)
    for name, secs, _ in rows:
        by_folder[folder_of(name)] += secs
    lines += ["", "| folder | tests | seconds |", "|---|---|---|"]
    counts: dict[str, int] = defaultdict(int)
    for name, _, _ in rows:
        counts[folder_of(name)] += 1
    for folder, secs in sorted(by_folder.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {folder} | {counts[folder]} | {secs:.1f} |")
    return "\n".join(lines)


def checkout(rev: str) -> Path:
    """The tree of `rev` in a temporary folder (its package first on the path: it is imported from there)."""
    tree = Path(tempfile.mkdtemp(prefix=f"tests-at-{rev[:12]}-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--top", type=int, default=30, help="how many tests to list (30)")
    parser.add_argument("--report", type=Path, help="read this JUnit XML report instead of running pytest")
    parser.add_argument("--by-file", action="store_true", help="list test files, not tests")
    parser.add_argument("--at", metavar="REV", help="run the tests of this git revision (a before/after pair)")
    parser.add_argument("paths", nargs="*", help="test paths (default: the whole suite)")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    report = args.report
    code = 0
    started = time.monotonic()
    if report is None:
        report = Path(tempfile.mkdtemp()) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *args.paths, *extra]
        tree = checkout(args.at) if args.at else ROOT
        code = subprocess.call(cmd, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)} if args.at else None)
    rows = read_report(report)
    print(table(rows, args.top, args.by_file))
    total = sum(r[1] for r in rows)
    if args.report is None:
        print(f"\n{len(rows)} tests, {total:.0f} s of test time, {time.monotonic() - started:.0f} s wall-clock (pytest exit {code})")
    else:
        print(f"\n{len(rows)} tests, {total:.0f} s of test time")
    return code


if __name__ == "__main__":
    sys.exit(main())
