"""Owners stay owners (issue 55): the labelled bilingual set tests/data/owners.jsonl (statements about a
relative, a friend, a colleague or a pet, each with the owner its fact must keep and the fact's words), said
through add(infer=True) and then consolidate() on a fresh store, one user per row.

    python scripts/eval.py owners                      # offline rules, both splits
    python scripts/eval.py owners --split tune         # the half the rules were tuned on
    python scripts/eval.py owners --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b

A row keeps its owner when every memory that states its fact (episodes, and after consolidation the distilled
facts too) names the owner before the fact in that sentence, with no user subject in between ("我老公…是一名
建筑设计师" and "用户的老公是一名建筑设计师" keep it; "用户是一名建筑设计师" does not). A row none of whose memories
states the fact counts as kept (nothing was moved) and is counted apart, as "fact not stored".
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.eval_common import add_model_arguments, model_settings  # noqa: E402

DEFAULT_DATA = ROOT / "tests" / "data" / "owners.jsonl"
SPLITS = ("tune", "held_out")
_SENTENCE = re.compile(r"[。！？!?；;]|\.(?:\s|$)")
# The user as a subject: "我" (not "我老公", "我的", "我家", "我们"), "用户" (not "用户的"), "I", "the user" (not "'s").
_USER = re.compile(r"我(?![们的家])|用户(?![的家])|\b(?:I|I'm|I've|I'd|me)\b|\bthe user\b(?!'s)", re.IGNORECASE)


def load_rows(path: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """The labelled rows: id, split, lang, text, owner (the words that name the owner), fact (the fact's words)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def keeps_owner(memory: str, owner: list[str], fact: str) -> bool | None:
    """True: the sentence that states `fact` names the owner before it, no user subject between; False: it
    states it of someone else (the user); None: the memory does not state the fact."""
    low = memory.lower()
    if fact.lower() not in low:
        return None
    for sentence in _SENTENCE.split(memory):
        at = sentence.lower().find(fact.lower())
        if at < 0:
            continue
        before = sentence[:at]
        marks = [before.lower().rfind(o.lower()) for o in owner]
        last = max(marks)
        if last < 0 or _USER.search(before[last:]):
            return False
    return True


def judge(memories: list[str], row: dict[str, Any]) -> str:
    """"kept", "moved" or "not stored" for one row's memories."""
    verdicts = [keeps_owner(m, row["owner"], row["fact"]) for m in memories]
    if any(v is False for v in verdicts):
        return "moved"
    return "kept" if any(v for v in verdicts) else "not stored"


def evaluate(rows: list[dict[str, Any]], llm: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """Each row said by a user of its own, the store read after the adds and after one consolidation."""
    from hippocampus import Memory

    memory = Memory(milvus_uri=str(folder / "owners.db"), collection_name=f"owners_{uuid.uuid4().hex[:8]}", **llm)
    try:
        users = {row["id"]: f"u_{row['id']}" for row in rows}
        for row in rows:
            memory.add(row["text"], user_id=users[row["id"]], infer=True)
        after_add = {rid: [r.text for r in memory.get_all(u)] for rid, u in users.items()}
        memory.consolidate()
        after = {rid: [r.text for r in memory.get_all(u)] for rid, u in users.items()}
    finally:
        memory.close()
    return [{**row, "add": judge(after_add[row["id"]], row), "consolidate": judge(after[row["id"]], row),
             "memories": after[row["id"]]} for row in rows]


def render(results: list[dict[str, Any]], splits: tuple[str, ...], title: str) -> str:
    lines = [title, "", "| split | rows | owner kept after add | owner kept after consolidate | fact not stored |",
             "|---|---:|---:|---:|---:|"]
    for split in splits:
        part = [r for r in results if r["split"] == split]
        if not part:
            continue
        share = lambda phase: sum(r[phase] != "moved" for r in part) / len(part)  # noqa: E731
        lines.append(f"| {split} | {len(part)} | {share('add'):.1%} | {share('consolidate'):.1%} | "
                     f"{sum(r['consolidate'] == 'not stored' for r in part)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--split", choices=(*SPLITS, "both"), default="both")
    add_model_arguments(p)
    args = p.parse_args(argv)
    llm, model_line = model_settings(p, args)
    splits = SPLITS if args.split == "both" else (args.split,)
    rows = [r for r in load_rows(args.data) if r["split"] in splits]
    with tempfile.TemporaryDirectory(prefix="eval_owners_") as folder:
        results = evaluate(rows, llm, Path(folder))
    print(render(results, splits, f"owners set ({len(rows)} rows), {model_line}"))
    for r in results:
        if "moved" in (r["add"], r["consolidate"]):
            print(f"  moved {r['id']} ({r['split']}): {r['text']} -> {r['memories']}")
    return 0
