"""Whole words at any terminal width (issue 45, item 2).

Before: at COLUMNS=60 `list` printed "I signed the lea" and "the landlor" (the table was wider than
the terminal, which cut it); `service status` at 80 columns cut the store path after a few characters.
Now small columns give way to the text, the text wraps between words, a long path is folded in its
middle, and `--wide` prints every row whole."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from hippocampus.cli import render
from hippocampus.models import HistoryAction, HistoryEvent, MemoryRecord, MemoryType

LEASE = "I signed the lease for the flat on Kastanienallee with the landlord, Mrs Weber, on Tuesday; the deposit is three months of rent"


def hippocampus(cwd: Path, *args: str, columns: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPOCAMPUS_")}
    env.update({"HIPPOCAMPUS_HOME": str(cwd / "home"), "COLUMNS": str(columns), "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    done = subprocess.run([sys.executable, "-m", "hippocampus", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done


def text_cells(out: str) -> list[str]:
    """The words of the last column (text) of a rich table, across its wrapped lines."""
    return " ".join(line.split("│")[-2] for line in out.splitlines() if line.count("│") >= 3).split()


def whole(words: list[str], source: str) -> bool:
    known = set(source.split())
    return all(w.removesuffix("…") in known for w in words if w.removesuffix("…"))


def test_list_search_and_service_status_keep_words_and_paths_whole(tmp_path: Path):
    hippocampus(tmp_path, "--uri", "./s.db", "add", LEASE, "-u", "a", "--semantic", columns=80)
    for args in (["list", "-u", "a"], ["search", "lease deposit", "-u", "a"]):
        out = hippocampus(tmp_path, "--uri", "./s.db", *args, columns=60).stdout
        assert max(cell_len(line) for line in out.splitlines()) <= 60, out
        words = text_cells(out)
        assert words[:4] == ["I", "signed", "the", "lease"] and whole(words, LEASE), out
        assert "lea\n" not in out and "landlor " not in out
    assert "1 memory of a" in hippocampus(tmp_path, "--uri", "./s.db", "list", "-u", "a", columns=80).stdout
    wide = hippocampus(tmp_path, "--uri", "./s.db", "list", "-u", "a", "--wide", columns=60).stdout
    assert LEASE in wide  # the escape: one line a row, whatever the width

    deep = tmp_path / ("projects/" * 6) / "customer-support-agent" / "memories.db"
    services = tmp_path / "home" / "services"
    services.mkdir(parents=True)
    (services / "4242.json").write_text(json.dumps({"url": "http://127.0.0.1:8765", "pid": 4242, "store": str(deep),
                                                    "collection": None, "started_at": "2026-11-28T09:00:00+00:00"}))
    out = hippocampus(tmp_path, "service", "status", columns=80).stdout
    assert max(cell_len(line) for line in out.splitlines()) <= 80, out
    store_line = next(line for line in out.splitlines() if "memories.db" in line)
    assert str(tmp_path)[:8] in store_line and "…" in store_line  # root and file name kept, the middle folded
    assert str(deep) in hippocampus(tmp_path, "service", "status", "--wide", columns=80).stdout


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)


@settings(max_examples=25, deadline=None)
@given(width=st.integers(min_value=40, max_value=200), words=st.lists(WORD, min_size=1, max_size=40),
       kind=st.sampled_from(list(MemoryType)), chat=WORD)
def test_tables_fit_any_width_and_break_only_between_words(width: int, words: list[str], kind: MemoryType, chat: str):
    text = " ".join(words)
    record = MemoryRecord(id=123456, user_id="u", chat_id=chat, who="someone", text=text, memory_type=kind, ts=1_700_000_000)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, highlight=False, emoji=False)
    console.print(render.records_table([record], title="1 memory of u", width=width))
    out = buffer.getvalue()
    assert max(cell_len(line) for line in out.splitlines()) <= width
    shown = text_cells(out)
    assert shown and whole(shown, text), out
    assert " ".join(w.removesuffix("…") for w in shown) == " ".join(text.split()[: len(shown)])  # in order, none skipped


@settings(max_examples=15, deadline=None)
@given(width=st.integers(min_value=40, max_value=200), old=st.lists(WORD, min_size=1, max_size=12),
       new=st.lists(WORD, min_size=1, max_size=12))
def test_history_fits_any_width_and_keeps_words_whole(width: int, old: list[str], new: list[str]):
    """Before: at 40 columns the old and new text columns had no room at all (0 cells each)."""
    event = HistoryEvent(event_id=7, memory_id=1, user_id="u", action=HistoryAction.UPDATED,
                         old_text=" ".join(old), new_text=" ".join(new + ["again"]), at=1_700_000_000)
    buffer = io.StringIO()
    Console(file=buffer, width=width, highlight=False, emoji=False).print(render.history_table([event], 1, width=width))
    out = buffer.getvalue()
    assert max(cell_len(line) for line in out.splitlines()) <= width
    shown = [w for w in text_cells(out) if w not in ("was:", "now:")]
    if width >= render.COMPACT:  # two text columns: the words of both, read row by row
        shown = " ".join(line.split("│")[-3] + " " + line.split("│")[-2] for line in out.splitlines() if line.count("│") >= 3).split()
    assert {w.removesuffix("…") for w in shown} - {""} <= set(old) | set(new) | {"again"}, out
    assert any(w.removesuffix("…") for w in shown)
