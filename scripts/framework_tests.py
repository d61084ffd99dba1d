"""Run LangGraph's and the OpenAI Agents SDK's own store and session tests against Hippocampus's
adapters, outside this repository, changing only how the store or session is constructed.

    python scripts/framework_tests.py --langgraph /path/to/langgraph-git-dir \
        --agents /path/to/openai-agents-python-git-dir [--deps DIR] [--target hippocampus|reference|both]

The test files are exported from the given git directories (HEAD) into a temporary folder. In them
only the import of the store or session class is rewritten to `hshim`, a module written next to
them whose classes keep the construction API (`SqliteStore.from_conn_string(path, index=, ttl=)`
and `.setup()`, `AsyncSqliteStore`, `InMemoryStore(index=)`, `SQLiteSession(session_id, db_path,
session_settings=)` and `.close()`; the async store's `sweep_ttl` / `start_ttl_sweeper` / `stop_ttl_sweeper`
are coroutines there, so they are mapped to the adapter's `asweep_ttl` and awaitable wrappers) and return a HippocampusStore (prefix=(), the documented open
default, no `users=`) or a HippocampusSession over a Memory on a fresh collection (one per
db_path, so the same path is the same store), with the bundled deterministic test embedder. The
assertions are untouched. `--target reference` runs the same files with LangGraph's InMemoryStore
behind every store construction and the SDK's own SQLiteSession, as the baseline. `--deps` is a
folder with pytest-asyncio and pytest-mock (e.g. `pip install --target DIR pytest-asyncio pytest-mock`).
Prints a table of pass / fail counts per file and target; `--keep` leaves the folder for reruns.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH_FILES = ["libs/checkpoint/tests/test_store.py", "libs/checkpoint/tests/embed_test_utils.py",
                   "libs/checkpoint/tests/__init__.py", "libs/checkpoint-sqlite/tests/test_store.py",
                   "libs/checkpoint-sqlite/tests/test_async_store.py", "libs/checkpoint-sqlite/tests/test_ttl.py",
                   "libs/checkpoint-sqlite/tests/__init__.py"]
LANGGRAPH_RUN = ["checkpoint/tests/test_store.py", "checkpoint-sqlite/tests/test_store.py",
                 "checkpoint-sqlite/tests/test_async_store.py", "checkpoint-sqlite/tests/test_ttl.py"]
AGENTS_RUN = ["tests/memory/test_session.py", "tests/memory/test_session_limit.py"]

SHIM = '''"""Construction only: the framework's store / session classes as Hippocampus adapters (see framework_tests.py)."""
import contextlib, hashlib, os, tempfile, uuid
TARGET = os.environ.get("HSHIM_TARGET", "hippocampus")
_DB = os.path.join(tempfile.mkdtemp(prefix="hshim"), "m.db")
_MEMORIES = {}


def _memory(key=None):
    from hippocampus import Memory
    from hippocampus.testing import DeterministicEmbedder
    if key is None or key not in _MEMORIES:
        name = "s_" + (hashlib.sha256(str(key).encode()).hexdigest()[:16] if key is not None else uuid.uuid4().hex[:16])
        memory = Memory(milvus_uri=_DB, collection_name=name, embedder=DeterministicEmbedder())
        if key is None:
            return memory
        _MEMORIES[key] = memory
    return _MEMORIES[key]


def _index(index):
    if not index:
        return None
    out = {k: v for k, v in dict(index).items() if k in ("dims", "embed", "fields")}
    if index.get("text_fields") is not None:
        out["fields"] = index["text_fields"]
    return out


def _store(index=None, ttl=None):
    if TARGET == "reference":
        from langgraph.store.memory import InMemoryStore as Reference

        class Store(Reference):  # a __dict__ (InMemoryStore has __slots__), so setup can be set below
            pass

        store = Store(index=_index(index))
        store.setup = lambda: None
        return store
    import inspect
    from hippocampus.integrations.langgraph import HippocampusStore
    kwargs = {"prefix": (), "ttl": ttl}
    if "index" in inspect.signature(HippocampusStore).parameters:
        kwargs["index"] = _index(index)
    store = HippocampusStore(_memory(), **kwargs)
    store.setup = lambda: None
    return store


def InMemoryStore(*, index=None):
    return _store(index)


class SqliteStore:
    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, conn_string, *, index=None, ttl=None, **_):
        yield _store(index, ttl)


class _AsyncSetup:
    def __init__(self, store):
        self.store = store

    async def __aenter__(self):
        async def setup():
            return None
        self.store.setup = setup
        if TARGET != "reference":  # AsyncSqliteStore's sweep methods are coroutines: ours as awaitables
            import asyncio
            store = self.store
            sync_start, sync_stop = store.start_ttl_sweeper, store.stop_ttl_sweeper
            store.sweep_ttl = store.asweep_ttl

            async def start_ttl_sweeper(sweep_interval_minutes=None):
                return asyncio.wrap_future(sync_start(sweep_interval_minutes))

            async def stop_ttl_sweeper(timeout=None):
                return await asyncio.to_thread(sync_stop, timeout)
            store.start_ttl_sweeper, store.stop_ttl_sweeper = start_ttl_sweeper, stop_ttl_sweeper
        return self.store

    async def __aexit__(self, *exc):
        return False


class AsyncSqliteStore:
    @classmethod
    def from_conn_string(cls, conn_string, *, index=None, ttl=None, **_):
        return _AsyncSetup(_store(index, ttl))


SqliteIndexConfig = dict


def SQLiteSession(session_id, db_path=":memory:", session_settings=None, **kwargs):
    import inspect
    from hippocampus.integrations.openai_agents import HippocampusSession
    memory = _memory(None if str(db_path) == ":memory:" else str(db_path))
    extra = {"session_settings": session_settings} if "session_settings" in inspect.signature(HippocampusSession).parameters else {}
    session = HippocampusSession(memory, "sdk-tests", session_id, **extra)
    session.close = lambda: None
    return session


if TARGET == "reference":  # the SDK's own class, untouched
    from agents import SQLiteSession
'''

# (file pattern, regex, replacement): the import of the class under test only
REWRITES = [
    ("checkpoint/tests/test_store.py", r"^from langgraph\.store\.memory import InMemoryStore$", "from hshim import InMemoryStore"),
    ("checkpoint-sqlite/tests/", r"^from langgraph\.store\.sqlite(?:\.aio)? import (SqliteStore|AsyncSqliteStore)$",
     r"from hshim import \1"),
    ("tests/memory/", r"^from agents import (.*\bSQLiteSession\b.*)$", lambda m: _without_session(m.group(1))),
]


def _without_session(names: str) -> str:
    """`from agents import A, SQLiteSession, B` -> the same import without it, and hshim's in its place."""
    kept = [n.strip() for n in names.split(",") if n.strip() and n.strip() != "SQLiteSession"]
    return (f"from agents import {', '.join(kept)}\n" if kept else "") + "from hshim import SQLiteSession"


def export(git_dir: str, paths: list[str], into: Path) -> None:
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", "HEAD", *paths], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def rewrite(folder: Path) -> list[str]:
    changed = []
    for path in folder.rglob("*.py"):
        text = original = path.read_text()
        rel = str(path.relative_to(folder))
        for where, pattern, repl in REWRITES:
            if where in rel:
                text = re.sub(pattern, repl, text, flags=re.M)
        if text != original:
            path.write_text(text)
            changed.append(rel)
    return changed


def run(cwd: Path, files: list[str], target: str, deps: str | None) -> dict[str, tuple[int, int, int]]:
    env = {**os.environ, "HSHIM_TARGET": target, "PYTHONPATH": os.pathsep.join(p for p in [str(cwd), str(ROOT), deps or ""] if p)}
    out: dict[str, tuple[int, int, int]] = {}
    for f in files:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=session", "--rootdir", str(cwd),
               "-c", "/dev/null", f]
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            out[f] = (0, -1, 0)  # timed out: shown as failed -1
            continue
        tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
        counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error|errors|skipped)", tail)}
        out[f] = (counts.get("passed", 0), counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0),
                  counts.get("skipped", 0))
        if os.environ.get("FRAMEWORK_TESTS_VERBOSE"):
            print(proc.stdout[-4000:], proc.stderr[-2000:])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--langgraph", help="langchain-ai/langgraph git dir")
    parser.add_argument("--agents", help="openai/openai-agents-python git dir")
    parser.add_argument("--deps", help="folder with pytest-asyncio and pytest-mock")
    parser.add_argument("--target", choices=["hippocampus", "reference", "both"], default="both")
    parser.add_argument("--keep", help="export into this folder and leave it")
    args = parser.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="framework-tests"))
    targets = ["reference", "hippocampus"] if args.target == "both" else [args.target]
    rows = []
    try:
        if args.langgraph:
            lg = folder / "langgraph"
            lg.mkdir(parents=True, exist_ok=True)
            export(args.langgraph, LANGGRAPH_FILES, lg)
            for sub in ("checkpoint", "checkpoint-sqlite"):  # the files import `tests.` from their library's root
                shutil.copytree(lg / "libs" / sub, lg / sub, dirs_exist_ok=True)
            shutil.rmtree(lg / "libs")
            (lg / "hshim.py").write_text(SHIM)
            rewrite(lg)
            for target in targets:
                for sub in ("checkpoint", "checkpoint-sqlite"):
                    files = [f.split("/", 1)[1] for f in LANGGRAPH_RUN if f.startswith(sub + "/")]
                    shutil.copy(lg / "hshim.py", lg / sub / "hshim.py")
                    for f, counts in run(lg / sub, files, target, args.deps).items():
                        rows.append(("langgraph", f"{sub}/{f}", target, *counts))
        if args.agents:
            oa = folder / "agents"
            oa.mkdir(parents=True, exist_ok=True)
            export(args.agents, ["tests"], oa)
            (oa / "hshim.py").write_text(SHIM)
            rewrite(oa)
            for target in targets:
                for f, counts in run(oa, AGENTS_RUN, target, args.deps).items():
                    rows.append(("agents", f, target, *counts))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print("| framework | file | target | passed | failed | skipped |\n|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    totals: dict[tuple[str, str], list[int]] = {}
    for fw, _f, target, p, f, s in rows:
        t = totals.setdefault((fw, target), [0, 0, 0])
        t[0], t[1], t[2] = t[0] + p, t[1] + f, t[2] + s
    for (fw, target), (p, f, s) in totals.items():
        print(f"| {fw} | all | {target} | {p} | {f} | {s} |")


if __name__ == "__main__":
    main()
