"""Screenshots of the Web UI's main pages for docs/ (docs/ui.md shows them).

    python scripts/ui_screenshots.py [--out docs] [--chromium /usr/bin/chromium]

A temporary milvus-lite store gets a small bilingual memory (offline defaults: rules LLM, bundled
embedder), one consolidation and an edit, then `create_app` serves it on a free loopback port and
Debian's Chromium (driven by Playwright) saves ui_memories.png, ui_memory.png, ui_search.png and
ui_stats.png at 1280 px, and ui_phone_memories.png and ui_phone_stats.png at a phone's 390 px.
Prints the paths it wrote.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TURNS = [
    ("My name is Lina Park", "c1", 0), ("I prefer green tea to coffee", "c1", 60), ("我对花生过敏", "c2", 3600),
    ("I moved to Berlin in May", "c1", 86400), ("My sister Ana lives in Lyon", "c3", 2 * 86400),
    ("We adopted a cat named Miso", "c4", 3 * 86400), ("We adopted a cat named Miso", "c4", 3 * 86400 + 120),
    ("Remind me to book the train to Hamburg on Friday", "c5", 4 * 86400), ("下周二去上海出差", "c6", 5 * 86400),
    ("I play the cello on Sundays", "c7", 6 * 86400), ("My daughter Emma was born on 3 March 2019", "c8", 7 * 86400),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _seed(memory, start: int) -> int:
    from hippocampus.models import simulated_clock

    ids = []
    for text, chat, dt in TURNS:  # written when they happened, so the per-day chart has days
        with simulated_clock(lambda at=start + dt: at):
            ids.append(memory.add(text, user_id="lina", chat_id=chat, ts=start + dt).ids[0])
    memory.curate(ids[0], "lina", category="core")
    memory.consolidate("lina")
    memory.update(ids[3], "I moved to Berlin in June", user_id="lina")
    return ids[3]


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs"), help="directory for the PNGs")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import uvicorn
    from playwright.sync_api import sync_playwright

    from hippocampus import Memory
    from hippocampus.models import now_ts
    from hippocampus.server import create_app

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp, Memory(milvus_uri=str(Path(tmp) / "ui.db")) as memory:
        edited = _seed(memory, now_ts() - 9 * 86400)
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(memory, mcp=False, close_memory=False), host="127.0.0.1",
                                               port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}/ui/users/lina"
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                for name, url in [("ui_memories", f"{base}/memories"), ("ui_memory", f"{base}/memories/{edited}"),
                                  ("ui_search", f"{base}/search?q=what+can%27t+I+eat%3F"), ("ui_stats", f"{base}/stats")]:
                    page.goto(url)
                    path = out / f"{name}.png"
                    page.screenshot(path=str(path), full_page=True)
                    written.append(path)
                phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1)
                for name, url in [("ui_phone_memories", f"{base}/memories"), ("ui_phone_stats", f"{base}/stats")]:
                    phone.goto(url)
                    path = out / f"{name}.png"
                    phone.screenshot(path=str(path), full_page=False)
                    written.append(path)
                browser.close()
        finally:
            server.should_exit = True
            thread.join(timeout=30)
    for path in written:
        print(path)
    return written


if __name__ == "__main__":
    main()
