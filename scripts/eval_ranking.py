#!/usr/bin/env python
"""Does the answer come first? Everyday questions whose answer is one stored statement (issue 55).

The set (tests/data/ranking_questions.json) is eight users' stores ("personas"), each a mix of what a
chat hook keeps: statements about the user's job, home, pet, age, diet, allergy, birthday, boss, rent,
car and hometown, a relative's or a friend's fact on the same topics, questions and requests to the
assistant ("鸭血粉丝汤哪家好", "Can you recommend a good dog trainer?"), remarks and chatter ("ugh,
work was so long today", "I'm learning Spanish on Duolingo every morning before work"), in English and
Chinese. Each question names the memory that answers it; a third of them ask in the other language.
The split is by persona: tune on `--split tune`, report `held_out` once.

Each persona's memories go into a fresh store through the chat hook's path, one user turn at a time
with `add([{"role": "user", "content": text}], infer=True)` (the offline rules decide what is kept and
may trim a turn; a hit is a returned memory whose text or `source_text` is the answer), or with
`--raw` through `add_many` (infer=False: every text stored as it is). Then each question is searched
(top 3, the default ranking) and hit@1 / hit@3 printed per slot, per language and per split.

    python scripts/eval.py ranking                       # both splits, the chat hook's path
    python scripts/eval.py ranking --split tune --misses # the tune half, with what came first when missed
    python scripts/eval.py ranking --raw --json out.json
    python scripts/eval.py ranking --raw --split tune --weights ask=0,slot=0   # the answer stage off
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from hippocampus import Memory

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "tests" / "data" / "ranking_questions.json"


def texts_of(hit: Any) -> set[str]:
    """What a hit may be compared by: its text, and the turn it came from."""
    meta = hit.memory.metadata or {}
    return {hit.memory.text, str(meta.get("source_text") or "")} - {""}


def run_persona(persona: dict[str, Any], root: str, raw: bool, weights: dict[str, float]) -> list[dict[str, Any]]:
    """Every question of one persona, asked of a fresh store holding its memories."""
    user = persona["user"]
    with Memory(milvus_uri=str(Path(root) / f"{persona['id']}.db")) as memory:
        if weights:  # the answer stage's weights (retrieval/answer.py), for a tuning grid
            memory.retriever.params = replace(memory.retriever.params, **weights)
        if raw:
            memory.add_many([{"text": t, "user_id": user} for t in persona["memories"]])
        else:
            for text in persona["memories"]:
                memory.add([{"role": "user", "content": text}], user_id=user, infer=True)
        out = []
        for q in persona["questions"]:
            hits = memory.search(q["q"], user_id=user, limit=3).all
            answer = set(q["a"])
            ranks = [i for i, h in enumerate(hits) if texts_of(h) & answer]
            out.append({**q, "persona": persona["id"], "split": persona["split"], "rank": ranks[0] if ranks else None,
                        "first": hits[0].memory.text if hits else None})
        return out


def table(rows: list[dict[str, Any]], key: str) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    lines = [f"{key:<10} {'n':>3} {'hit@1':>7} {'hit@3':>7}"]
    for name in sorted(groups):
        g = groups[name]
        h1 = sum(r["rank"] == 0 for r in g)
        h3 = sum(r["rank"] is not None for r in g)
        lines.append(f"{name:<10} {len(g):>3} {h1:>3}/{len(g):<3} {h3:>3}/{len(g):<3}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--split", choices=("all", "tune", "held_out"), default="all")
    ap.add_argument("--raw", action="store_true", help="store every memory as it is (add_many, infer=False)")
    ap.add_argument("--misses", action="store_true", help="print each question whose answer is not first")
    ap.add_argument("--json", type=Path, help="write every question's rank here")
    ap.add_argument("--weights", default="", metavar="ask=W,slot=W",
                    help="the answer stage's weights (retrieval/answer.py) instead of the defaults, e.g. ask=0,slot=0")
    args = ap.parse_args(argv)
    weights = {f"{k.strip()}_weight": float(v) for k, v in (kv.split("=") for kv in args.weights.split(",") if kv)}
    data = json.loads(args.data.read_text(encoding="utf-8"))
    personas = [p for p in data["personas"] if args.split in ("all", p["split"])]
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eval-ranking-") as root:
        for persona in personas:
            rows += run_persona(persona, root, args.raw, weights)
    path = "add_many (infer=False)" if args.raw else "add(..., infer=True), one turn at a time"
    for split in sorted({r["split"] for r in rows}, reverse=True):
        part = [r for r in rows if r["split"] == split]
        h1 = sum(r["rank"] == 0 for r in part)
        h3 = sum(r["rank"] is not None for r in part)
        print(f"\nsplit {split}: {len(part)} questions, {path}: hit@1 {h1}/{len(part)} ({h1 / len(part):.1%}), "
              f"hit@3 {h3}/{len(part)} ({h3 / len(part):.1%})")
        for key in ("slot", "lang"):
            print("\n".join(table(part, key)))
        if args.misses:
            for r in part:
                if r["rank"] != 0:
                    print(f"  miss [{r['persona']}] {r['q']} -> rank {r['rank']}; first: {r['first']}")
    print(f"\n{time.perf_counter() - t0:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0
