"""The CLI `list` table shows a memory's slots under its text (issue 55, cli/render.py `slots_line`): before, the
table showed no slot, so a superseded or kept value could not be seen without `get --json`."""

from __future__ import annotations

from rich.console import Console

from hippocampus.cli.render import records_table, slots_line
from hippocampus.models import MemoryRecord
from hippocampus.text.slots import KEY, read, stored


def _record(i: int, text: str) -> MemoryRecord:
    return MemoryRecord(id=i, user_id="u", memory_type="episodic", ts=1_767_225_600, chat_id="c", who="u", text=text,
                        metadata={KEY: stored(read(text))})


def test_list_shows_each_memorys_slots_compactly() -> None:
    home, zh, none = (_record(1, "I live in Denver and my sister lives in Lyon."), _record(2, "我不在德勤了"),
                      _record(3, "Had a great day."))
    assert slots_line(home) == "user.home=denver sister.home=lyon"
    assert slots_line(zh) == "user.employer!=deloitte" and slots_line(none) == ""
    console = Console(width=160, record=True)
    console.print(records_table([home, zh, none], width=160))
    shown = console.export_text()
    assert "user.home=denver sister.home=lyon" in shown and "user.employer!=deloitte" in shown
