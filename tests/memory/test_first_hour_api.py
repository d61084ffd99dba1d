"""What a new user meets in the first hour (issue 18): library-owned metadata keys cannot be set,
`hippocampus schedule` says when a run starts and ends, and every public method of Memory says
what it does and what it raises."""

from __future__ import annotations

import inspect
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from typer.testing import CliRunner

from hippocampus import Client, InvalidInput, Memory
from hippocampus.cli.app import app
from hippocampus.consolidation import schedule
from hippocampus.models import ConsolidationStats
from hippocampus.validation import OWNED_KEYS, check_caller_metadata

runner = CliRunner(env={"COLUMNS": "200"})


def cli(uri: str, *args: str, code: int = 0):
    result = runner.invoke(app, ["--uri", uri, *args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return result


# ------------------------------------------------------------------ owned metadata keys
@pytest.mark.parametrize("key", ["created_at", "updated_at", "pending_decision", "merged_from_ids", "source_memory_ids",
                                 "merge_pending", "distilled", "separated_from"])
def test_library_owned_metadata_keys_are_refused_on_every_write_before_anything_is_written(memory: Memory, key: str):
    user = f"owned-{key}"
    with pytest.raises(InvalidInput, match=key):
        memory.add("x", user_id=user, metadata={key: 5})
    with pytest.raises(InvalidInput, match=key):
        memory.add("x", user_id=user, metadata={key: 5}, infer=True)
    with pytest.raises(InvalidInput, match=key):
        memory.add_many([{"text": "fine", "user_id": user}, {"text": "x", "user_id": user, "metadata": {key: 5}}])
    assert memory.get_all(user) == []  # the good first item of add_many was not written either
    mid = memory.add("kept", user_id=user, metadata={"tag": "a"}).ids[0]
    before = memory.get(mid, user_id=user)
    with pytest.raises(InvalidInput, match=key):
        memory.update(mid, "changed", user_id=user, metadata={key: 5})
    assert memory.get(mid, user_id=user) == before
    memory.search("kept", user_id=user, filters={key: 5})  # filtering on an owned key stays allowed


def test_the_refusal_says_why_and_created_at_stays_the_librarys(memory: Memory):
    with pytest.raises(InvalidInput) as caught:
        memory.add("x", user_id="owned-why", metadata={"created_at": 5})
    assert "created_at" in str(caught.value) and "hippocampus" in str(caught.value)
    record = memory.get(memory.add("x", user_id="owned-why").ids[0], user_id="owned-why")
    assert record.created_at is not None and record.created_at > 5


def test_caller_visible_keys_stay_settable(memory: Memory):
    meta = {"context": "c", "thing": "t", "time": "2024-01-01T00:00:00Z", "chatid": "c9", "who": "bob",
            "importance": 0.9, "updates": [], "project": "infra"}
    assert check_caller_metadata(meta) == meta
    mid = memory.add("settable", user_id="owned-ok", metadata=meta).ids[0]
    stored = memory.get(mid, user_id="owned-ok").metadata
    assert all(stored[k] == v for k, v in meta.items())
    assert set(OWNED_KEYS).isdisjoint(meta)


def test_cli_add_with_an_owned_key_exits_2_and_names_it(fresh_path: str):
    result = cli(fresh_path, "add", "x", "-u", "a", "-m", "created_at=5", code=2)
    assert "created_at" in result.stdout + result.stderr
    # the refused write left no store behind (issue 45), so a read finds none and makes none
    assert not Path(fresh_path).exists()
    assert "no store" in cli(fresh_path, "list", "-u", "a", "--json", code=2).stderr and not Path(fresh_path).exists()


# ------------------------------------------------------------------ schedule prints a line per run
class _Counting:
    def __init__(self):
        self.calls = 0

    def consolidate(self, user_id=None, progress=None):
        self.calls += 1
        return ConsolidationStats(examined=4, merged=1, llm_calls=2, seconds=0.25)


class _Failing:
    def consolidate(self, user_id=None, progress=None):
        raise RuntimeError("store went away")


def test_run_consolidation_reports_start_and_end_with_counts():
    lines: list[str] = []
    schedule.run_consolidation(_Counting(), "alice", report=lines.append)
    assert len(lines) == 2
    assert "started" in lines[0] and "'alice'" in lines[0]
    assert "finished" in lines[1] and "examined 4" in lines[1] and "merged 1" in lines[1] and "llm calls 2" in lines[1]
    lines.clear()
    with pytest.raises(RuntimeError):
        schedule.run_consolidation(_Failing(), report=lines.append)
    assert "started" in lines[0] and "all users" in lines[0] and "failed" in lines[1] and "store went away" in lines[1]


def test_a_scheduled_run_fired_now_reports_its_lines():
    """The real scheduler, told the next run is now (as if 03:00 had come)."""
    lines: list[str] = []
    done = threading.Event()

    def report(line: str) -> None:
        lines.append(line)
        if "finished" in line:
            done.set()

    scheduler = BackgroundScheduler(timezone="UTC")
    schedule.register_consolidation(scheduler, _Counting(), "0 3 * * *", report=report)
    scheduler.start()
    try:
        scheduler.modify_job(schedule.JOB_ID, next_run_time=datetime.now(timezone.utc))
        assert done.wait(10), lines
    finally:
        scheduler.shutdown(wait=True)
    assert [("started" in lines[0]), ("finished" in lines[1])] == [True, True]


class _FireOnce(BlockingScheduler):
    """Runs each registered job once, right away, instead of waiting for its cron time."""

    def start(self, *args, **kwargs):
        for job in self.get_jobs():
            job.func(*job.args, **job.kwargs)


def test_hippocampus_schedule_prints_a_line_when_a_run_starts_and_ends(fresh_path: str, monkeypatch):
    cli(fresh_path, "add", "I went to the dentist this afternoon and got a filling", "-u", "alice", "-c", "c1")
    cli(fresh_path, "add", "I went to the dentist this afternoon and got a filling. It cost 120 dollars.", "-u", "alice", "-c", "c1")
    monkeypatch.setattr(schedule, "BlockingScheduler", _FireOnce)
    out = cli(fresh_path, "schedule", "--cron", "0 3 * * *").stdout
    started = [line for line in out.splitlines() if "consolidation started" in line]
    finished = [line for line in out.splitlines() if "consolidation finished" in line]
    assert len(started) == 1 and len(finished) == 1, out
    assert "merged 1" in finished[0] and "examined" in finished[0] and "errors 0" in finished[0]


# ------------------------------------------------------------------ docstrings
def _public_methods(cls: type) -> dict[str, object]:
    """Public methods and properties of `cls` and the mixins it inherits (the most derived wins)."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__[:-1]):
        found.update({name: member for name, member in vars(klass).items()
                      if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))})
    return found


def test_every_public_method_of_memory_says_what_it_does_and_what_it_raises():
    methods = {**_public_methods(Memory), "__init__": Memory.__init__}
    assert {"add", "add_many", "update", "delete", "reset", "search", "get", "get_all", "page", "iter_all",
            "history", "stats", "consolidate", "decide_pending", "mark_used", "close", "decay", "restore", "curate",
            "context"} <= set(methods)
    for name, member in methods.items():
        doc = inspect.getdoc(member.fget if isinstance(member, property) else member) or ""
        assert len(doc) > 20, f"Memory.{name} has no docstring"
        assert "Raises" in doc, f"Memory.{name}'s docstring does not say what it raises"
        source = inspect.getsource(member.fget if isinstance(member, property) else member)
        if "V.check_" in source:
            assert "InvalidInput" in doc, f"Memory.{name} validates its input but does not say it raises InvalidInput"
        if "NotFound" in source or "self.get(" in source:
            assert "NotFound" in doc, f"Memory.{name} can raise NotFound but does not say so"


def test_every_client_verb_says_what_it_raises():
    for name in ("add", "add_many", "search", "get", "page", "update", "delete", "reset", "history", "mark_used",
                 "consolidate", "stats", "decay", "context", "curate", "restore"):
        doc = inspect.getdoc(getattr(Client, name)) or ""
        assert "Raises" in doc, f"Client.{name}'s docstring does not say what it raises"


def test_user_facing_text_has_no_design_document_names():
    root = Path(__file__).resolve().parents[2]
    pages = ["README.md", *(f"docs/{name}.md" for name in ("index", "python", "cli", "service", "mcp", "ui", "concepts", "aging",
                                                          "offline-vs-model", "graph-memory", "local-model", "configuration", "limits"))]
    texts = {page: (root / page).read_text(encoding="utf-8") for page in pages}
    for name, member in {**_public_methods(Memory), "__init__": Memory.__init__, "Memory": Memory}.items():
        texts[f"Memory.{name}"] = inspect.getdoc(member.fget if isinstance(member, property) else member) or ""
    for where, text in texts.items():
        assert "seed 00" not in text.lower(), f"{where} speaks of a design document the user has never seen"


def test_the_package_speaks_to_users_not_of_design_documents():
    """Docstrings and comments say what a rule is; docs/design-sources.md says where it comes from."""
    import os
    import re

    import hippocampus
    from hippocampus.processors.base import packaged_prompts

    package, prompts = Path(hippocampus.__file__).parent, packaged_prompts()
    files = {(Path(d) / f).resolve() for d, _, names in os.walk(package, followlinks=True) if "__pycache__" not in d
             for f in names if f.endswith(".py")}
    files |= {p.resolve() for p in prompts.iterdir() if p.suffix in (".yaml", ".yml")}
    assert len([f for f in files if f.suffix == ".py"]) > 50 and len([f for f in files if f.suffix == ".yaml"]) > 5
    name = re.compile(r"seeds? 00|seed-notes", re.IGNORECASE)
    found = [f"{path}:{number}: {line.strip()}" for path in sorted(files)
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if name.search(line)]
    assert not found, "design-document names in the package (say what the rule is; record the source in "\
                      "docs/design-sources.md):\n" + "\n".join(found)


def test_a_remember_phrase_said_twice_is_one_memory_used_twice(memory):
    first = memory.add("请记住我对花生过敏", user_id="u", infer=True)
    again = memory.add("请记住我对花生过敏", user_id="u", infer=True)
    assert first.stored and not again.stored and again.ids == first.ids
    assert "already remembered" in again.reason
    record = memory.get(first.ids[0], "u")
    assert memory.stats("u")["total"] == 1 and record.hit_count == 1 and record.life.activation_count == 1
    assert memory.add("请记住我对虾过敏", user_id="u", infer=True).stored  # a different fact is new
