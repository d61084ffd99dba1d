"""scripts/ui_screenshots.py writes every screenshot docs/ui.md shows, here into a temporary folder."""

from __future__ import annotations

import os
import shutil

import pytest

from scripts import ui_screenshots

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}: apt-get install chromium")
def test_every_page_is_saved_as_a_png(tmp_path) -> None:
    written = ui_screenshots.main(["--out", str(tmp_path), "--chromium", CHROMIUM])
    names = {p.name for p in written}
    assert names == {"ui_memories.png", "ui_memory.png", "ui_search.png", "ui_stats.png", "ui_phone_memories.png",
                     "ui_phone_stats.png"}
    assert all(p.parent == tmp_path and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)
