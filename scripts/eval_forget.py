"""Forget requests and corrections said in a turn, measured on every write path (issue 31): the labelled
bilingual set tests/data/forget_correction.jsonl (forget requests, look-alikes such as "don't forget" or
"I forgot my keys", and corrections such as "I don't live in Paris anymore") through add(infer=True),
observe, a Session's extraction and the deferred decision (`write_decision: deferred`, then the pending
phase), offline (the rules) or with a model.

    python scripts/eval.py forget                         # offline rules provider, every path
    python scripts/eval.py forget --local                 # the server scripts/local_llm.py started
    python scripts/eval.py forget --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b --paths infer

Per path: forget requests honoured (the named memory left search and the prompt block, nothing of the
request stored, the rest kept), look-alikes left alone, corrections (the old fact left search and the
prompt block at once, the rest kept), and how many rows stored the request itself as a memory. Each row
runs for a fresh user of a real milvus-lite store in a temporary folder, with the offline embedder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.eval_common import add_model_arguments, model_settings  # noqa: E402

DEFAULT_DATA = ROOT / "tests" / "data" / "forget_correction.jsonl"
PATHS = ("infer", "observe", "session", "deferred")
KINDS = ("forget", "keep", "correction")
COLUMNS = ("forget honoured", "look-alikes left alone", "corrections", "request stored as a fact")


def load_rows(path: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """The labelled rows: id, lang, kind (forget / keep / correction), turn, prior, gone, stays."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def say(memory: Any, path: str, turn: str, user: str) -> None:
    """The turn said through one write path."""
    if path in ("infer", "deferred"):
        memory.add([{"role": "user", "content": turn}], user_id=user, infer=True)
        if path == "deferred":
            memory.decide_pending(user)
    elif path == "session":
        from hippocampus.agent.session import Session

        with Session(memory, user, "c1") as session:
            session.add_message("user", turn)
            session.add_message("assistant", "Okay.")
    elif path == "observe":
        memory.observe(turn, user_id=user)
    else:
        raise ValueError(f"unknown path {path!r}; one of {', '.join(PATHS)}")


def judge(row: dict[str, Any], active: Sequence[str], found: set[str], block: str) -> dict[str, Any]:
    """One row's outcome from what the store shows after the turn: `active` (neither gone nor superseded),
    `found` (a search for the turn), `block` (the prompt block). Pure."""
    from hippocampus.text import forget_clauses

    problems = [f"{g!r} still active" for g in row["gone"] if g in active or g in found or g in block]
    problems += [f"{s!r} was removed" for s in row["stays"] if s not in active]
    new = [t for t in active if t not in row["prior"]]
    stored_request = any(forget_clauses(t)[0] for t in new) or (row["kind"] == "forget" and bool(new))
    if row["kind"] == "forget" and new:
        problems.append(f"stored {new!r}")
    return {"id": row["id"], "kind": row["kind"], "ok": not problems, "request_stored": stored_request,
            "problems": "; ".join(problems)}


def run_row(memory: Any, row: dict[str, Any], path: str) -> dict[str, Any]:
    """Say the row's prior memories (infer=False), then its turn through `path`, and judge the result."""
    user = f"{row['id']}_{path}_{uuid.uuid4().hex[:6]}"
    for text in row["prior"]:
        memory.add(text, user_id=user)
    started = time.perf_counter()
    error = ""
    try:
        say(memory, path, row["turn"], user)
    except Exception as exc:  # a path that raises counts as wrong, and says why
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    active = [r.text for r in memory.get_all(user) if r.life.superseded_by is None]
    found = {h.memory.text for h in memory.search(row["turn"], user_id=user, limit=20).all}
    out = judge(row, active, found, str(memory.context(user, row["turn"])))
    if error:
        out.update(ok=False, problems=f"{error}; {out['problems']}".strip("; "))
    out["seconds"] = round(seconds, 2)
    return out


def score(outcomes: Sequence[dict[str, Any]]) -> dict[str, str | int]:
    """The table's cells for one path: n/N per kind, and the rows that stored the request. Pure."""
    cells: dict[str, str | int] = {}
    for kind, column in zip(KINDS, COLUMNS):
        mine = [o for o in outcomes if o["kind"] == kind]
        cells[column] = f"{sum(o['ok'] for o in mine)}/{len(mine)}"
    cells[COLUMNS[3]] = sum(bool(o["request_stored"]) for o in outcomes)
    return cells


def render(table: dict[str, dict[str, str | int]], title: str) -> str:
    """A plain-text table, one line per path. Pure."""
    head = ["path", *COLUMNS]
    rows = [[path, *(str(cells[c]) for c in COLUMNS)] for path, cells in table.items()]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths))  # noqa: E731
    return "\n".join([title, line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def evaluate(rows: Sequence[dict[str, Any]], paths: Sequence[str], open_memory: Callable[[str], Any],
             progress: Callable[[str], None] = lambda s: None) -> dict[str, list[dict[str, Any]]]:
    """Every row through every path; `open_memory(path)` gives the Memory a path writes to (the deferred
    path needs `write_decision: deferred`). The outcomes per path."""
    results: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        memory = open_memory(path)
        try:
            results[path] = []
            for row in rows:
                outcome = run_row(memory, row, path)
                results[path].append(outcome)
                progress(f"{path} {row['id']} {'ok' if outcome['ok'] else 'MISS ' + outcome['problems']} ({outcome['seconds']} s)")
        finally:
            memory.close()
    return results


def memory_opener(folder: Path, llm: dict[str, Any]) -> Callable[[str], Any]:
    """A fresh Memory per path in `folder`, with the offline embedder and `llm` settings (empty: offline)."""
    from hippocampus import Memory
    from hippocampus.embeddings import OfflineEmbedder

    def open_memory(path: str) -> Any:
        extra = {"write_decision": "deferred"} if path == "deferred" else {}
        return Memory(milvus_uri=str(folder / f"{path}.db"), collection_name=f"forget_{path}", embedder=OfflineEmbedder(),
                      **llm, **extra)

    return open_memory


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(p, "a reply's token cap (a small local model can repeat itself until the cap: 2048 tokens "
                        "at a few tokens a second is minutes per call)")
    p.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)} (default all)")
    p.add_argument("--limit", type=int, help="only the first N rows")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--json", type=Path, help="write the outcomes and the table here")
    p.add_argument("--quiet", action="store_true", help="no per-row progress on stderr")
    args = p.parse_args(argv)
    paths = [s.strip() for s in args.paths.split(",") if s.strip()]
    unknown = [s for s in paths if s not in PATHS]
    if unknown or not paths:
        p.error(f"--paths takes {', '.join(PATHS)}; got {args.paths!r}")
    llm, model_line = model_settings(p, args)
    rows = load_rows(args.data)[: args.limit] if args.limit else load_rows(args.data)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="eval_forget_") as folder:
        progress = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
        results = evaluate(rows, paths, memory_opener(Path(folder), llm), progress)
    table = {path: score(outcomes) for path, outcomes in results.items()}
    seconds = time.perf_counter() - started
    print(render(table, f"forget/correction set ({len(rows)} rows), {model_line}, {seconds:.0f} s"))
    for path, outcomes in results.items():
        misses = [f"{o['id']}: {o['problems']}" for o in outcomes if not o["ok"]]
        if misses:
            print(f"{path} misses: " + " | ".join(misses))
    if args.json:
        args.json.write_text(json.dumps({"model": model_line, "table": table, "outcomes": results}, ensure_ascii=False, indent=1),
                             encoding="utf-8")
    return 0
