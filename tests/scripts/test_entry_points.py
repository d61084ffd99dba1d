"""scripts/ holds what a user or CI runs, at most twelve entry points, and every command the docs quote
runs one of them (issue 59). An entry point is a file under scripts/ with `if __name__ == "__main__"`;
the modules behind `scripts/eval.py` are imported, never run on their own."""

from __future__ import annotations

import re
from pathlib import Path

from scripts import eval as evaluations

ROOT = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"python (?:\.\./)?scripts/([\w/]+)\.py(?:[ \t]+([\w-]+))?")


def entry_points() -> set[str]:
    return {p.relative_to(ROOT / "scripts").with_suffix("").as_posix() for p in (ROOT / "scripts").rglob("*.py")
            if 'if __name__ == "__main__"' in p.read_text(encoding="utf-8")}


def quoting_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "scripts").rglob("*.py"))]


def test_at_most_twelve_entry_points_and_eval_is_one_of_them() -> None:
    found = entry_points()
    assert "eval" in found and {"bench", "bench_cli", "bench_fairness", "structure", "verbs"} <= found
    assert len(found) <= 12, sorted(found)


def test_every_evaluation_is_a_module_with_main_and_no_entry_point_of_its_own() -> None:
    import importlib

    for name, (module, _) in evaluations.COMMANDS.items():
        loaded = importlib.import_module(f"scripts.{module}")
        assert callable(loaded.main), name
        assert module not in entry_points(), module


def test_every_command_the_docs_quote_runs_an_entry_point() -> None:
    """A removed script may be quoted only where the same page says which commit to restore it from."""
    found, wrong = entry_points(), []
    for path in quoting_files():
        text = path.read_text(encoding="utf-8")
        for script, word in COMMAND.findall(text):
            if script == "eval":
                if word not in evaluations.COMMANDS and word not in ("", "NAME"):  # NAME: the docstring's own usage
                    wrong.append(f"{path.name}: eval.py {word}")
            elif script not in found and f":scripts/{script}.py" not in text:
                wrong.append(f"{path.name}: {script}.py")
    assert wrong == []


def test_eval_lists_its_evaluations_and_runs_one(capsys) -> None:
    assert evaluations.main([]) == 2
    listed = capsys.readouterr().out
    assert all(name in listed for name in evaluations.COMMANDS)
    assert evaluations.main(["no-such"]) == 2
    assert evaluations.main(["slots", "--split", "tune"]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and out.splitlines()[-1].startswith("all")
