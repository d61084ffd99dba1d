#!/usr/bin/env python
"""Every quality evaluation behind one command: `python scripts/eval.py NAME [its flags]`.

    python scripts/eval.py                      # the list of evaluations
    python scripts/eval.py locomo --offset 5    # one of them; `python scripts/eval.py NAME --help` for its flags

Each evaluation is a module of scripts/ with a `main(argv)` (imported, never run on its own), so a
single entry point keeps the list of what can be measured in one place; the helpers they share
(model arguments, counting clients, the labelled sets' judges) are in scripts/eval_common.py.
Figures and the commands that measured them: docs/performance.md.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> (module under scripts/, what it measures)
COMMANDS: dict[str, tuple[str, str]] = {
    "locomo": ("eval_locomo", "LoCoMo retrieval, every turn stored raw (hit@k, all@k, MRR)"),
    "chathook": ("eval_chathook", "LoCoMo through the chat hook, add(..., infer=True)"),
    "crosslang": ("eval_crosslang", "cross-language recall: English memories, Chinese questions and back"),
    "ranking": ("eval_ranking", "does the answer come first (tests/data/ranking_questions.json)"),
    "slots": ("eval_slots", "corrections by slot (tests/data/slot_corrections.jsonl)"),
    "owners": ("eval_owners", "owners stay owners (tests/data/owners.jsonl)"),
    "forget": ("eval_forget", "forget requests and corrections said in a turn, every write path"),
    "processors": ("eval_processors", "the processors on the labelled sets: rules, a model, the gate"),
    "instructions": ("eval_instructions", "a project's custom categories and instructions"),
    "qa": ("eval_qa", "end-to-end QA on LoCoMo with a model answering and a judge"),
    "calibrate": ("calibrate_thresholds", "consolidation thresholds for an embedding model"),
    "lifecycle": ("simulate_lifecycle", "a simulated year of one user's memory (table, checks, PNG)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {about}" for name, (_, about) in COMMANDS.items())
    return f"usage: python scripts/eval.py NAME [flags]  (NAME --help for its flags)\n\n{rows}"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"unknown evaluation {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    module = importlib.import_module(f"scripts.{COMMANDS[name][0]}")
    sys.argv[0] = f"scripts/eval.py {name}"  # each evaluation's --help names the command that runs it
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
