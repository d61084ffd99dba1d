"""Corrections by slot (issue 55), measured on the labelled bilingual set tests/data/slot_corrections.jsonl:
pairs of (an earlier memory, a later turn) with whether the turn supersedes the memory, of kinds negation
("X, not Y"), actually (a new value said plainly), number, bare (a figure alone: "we settled on 6650"),
crosslang, multifact (a memory holding other facts too) and non_correction (another person, another slot,
the same value, a question, a plan, a trip: nothing may be superseded).

    python scripts/eval.py slots --split tune       # the half the rules were tuned on
    python scripts/eval.py slots --split heldout    # the other half: templates the rules never saw
    python scripts/eval.py slots --split heldout --misses   # and every wrong case

The reader is pure (text/slots.py): `corrected(read(old), read(new))` decides, exactly as the add path does
once the old memory is among the candidates its search returns. Prints supersede precision and recall per
kind (a non-correction kind has no positives: its false supersedes count against precision).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hippocampus.text.slots import corrected, read  # noqa: E402

DEFAULT_DATA = ROOT / "tests" / "data" / "slot_corrections.jsonl"


def load(path: Path, split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def predict(case: dict[str, Any]) -> bool:
    """Whether the later turn supersedes the earlier memory (a slot of it)."""
    return bool(corrected(read(case["old"]), read(case["new"])))


def score(cases: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per kind and "all": cases, tp, fp, fn, precision, recall (1.0 where nothing was to be found or claimed)."""
    table: dict[str, dict[str, float]] = {}
    for case in cases:
        got = predict(case)
        for kind in (case["kind"], "all"):
            row = table.setdefault(kind, {"cases": 0, "tp": 0, "fp": 0, "fn": 0})
            row["cases"] += 1
            row["tp"] += got and case["supersede"]
            row["fp"] += got and not case["supersede"]
            row["fn"] += case["supersede"] and not got
    for row in table.values():
        row["precision"] = row["tp"] / (row["tp"] + row["fp"]) if row["tp"] + row["fp"] else 1.0
        row["recall"] = row["tp"] / (row["tp"] + row["fn"]) if row["tp"] + row["fn"] else 1.0
    return table


def render(table: dict[str, dict[str, float]]) -> str:
    head = f"{'kind':<16}{'cases':>7}{'tp':>6}{'fp':>6}{'fn':>6}{'precision':>11}{'recall':>8}"
    kinds = sorted(k for k in table if k != "all") + ["all"]
    lines = [head, "-" * len(head)]
    for k in kinds:
        r = table[k]
        lines.append(f"{k:<16}{int(r['cases']):>7}{int(r['tp']):>6}{int(r['fp']):>6}{int(r['fn']):>6}"
                     f"{r['precision']:>11.3f}{r['recall']:>8.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "heldout", "all"), default="tune")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--misses", action="store_true", help="print every case decided wrongly")
    args = parser.parse_args(argv)
    cases = load(args.data, args.split)
    print(f"{len(cases)} cases, split {args.split}, {args.data.name}")
    print(render(score(cases)))
    if args.misses:
        for case in cases:
            if predict(case) != case["supersede"]:
                print(f"\n[{case['kind']}/{case['template']}] expected {case['supersede']}\n  old: {case['old']}\n  new: {case['new']}"
                      f"\n  read old: {[s.model_dump(exclude={'said'}) for s in read(case['old'])]}"
                      f"\n  read new: {[s.model_dump(exclude={'said'}) for s in read(case['new'])]}")
    return 0
