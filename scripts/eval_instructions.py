"""A project's instructions measured (issue 32, custom categories and instructions): the labelled bilingual
set tests/data/instructions_health.jsonl (health data such as diagnoses, medications and symptoms, and
everyday facts with look-alikes such as "I run a health food shop" or "我在医院附近上班") said through
add(infer=True), observe and a Session's extraction, with the policy below (a `health` category marked
sensitive, its keywords, and the instruction "never store health data") and without it.

    python scripts/eval.py instructions                   # offline rules provider, every path
    python scripts/eval.py instructions --local           # the server scripts/local_llm.py started
    python scripts/eval.py instructions --base-url http://127.0.0.1:8080/v1 --model qwen2.5-1.5b --paths infer

Per path and policy: health turns that left a memory (the target is 0), everyday turns that left one (kept),
everyday turns the instructions refused (the price of the keywords), and everyday turns filed under the
project's `diet` category. Each turn runs for a fresh user of a real milvus-lite store in a temporary
folder, with the offline embedder.
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

DEFAULT_DATA = ROOT / "tests" / "data" / "instructions_health.jsonl"
PATHS = ("infer", "observe", "session")
INSTRUCTIONS = "Remember dietary needs. Never store health data: diagnoses, medications, symptoms, treatments."
# The operator's declaration: words that name health data, not places or trades ("hospital", "health",
# "medicine" are left out on purpose: "I work near the hospital" is no health data).
HEALTH_KEYWORDS = (
    "diagnosed", "diagnosis", "prescribed", "prescription", "medication", "symptom", "fever", "cough", "coughing",
    "migraine", "headache", "insomnia", "nausea", "diabetes", "asthma", "depression", "anxiety disorder",
    "hypertension", "blood pressure", "cancer", "allergy", "allergic", "pregnant", "pregnancy", "arthritis",
    "cholesterol", "surgery", "physiotherapy", "chemotherapy", "inhaler", "insulin", "antidepressant",
    "确诊", "诊断", "处方", "吃药", "服药", "药物", "症状", "发烧", "咳嗽", "头痛", "偏头痛", "失眠", "过敏", "高血压",
    "血压", "糖尿病", "哮喘", "抑郁", "焦虑症", "癌", "手术", "化疗", "胰岛素", "胃镜", "肠镜", "怀孕", "体检",
)
CATEGORIES = (
    {"name": "health", "description": "the user's health: diagnoses, medications, symptoms, treatments, pregnancy",
     "sensitive": True, "keywords": list(HEALTH_KEYWORDS)},
    {"name": "diet", "description": "what the user eats or does not eat: vegetarian, vegan, halal, allergies excluded",
     "keywords": ["vegetarian", "vegan", "halal", "kosher", "gluten-free", "素食", "吃素", "不吃肉", "清真"], "decay": "never"},
)
POLICIES = {"with instructions": {"categories": list(CATEGORIES), "instructions": INSTRUCTIONS}, "without": {}}
COLUMNS = ("health stored", "everyday kept", "everyday refused", "filed as diet")


def load_rows(path: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """The labelled rows: id, lang, health (true / false), turn."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def say(memory: Any, path: str, turn: str, user: str) -> list[str]:
    """The turn said through one write path; the refusals it reported."""
    if path == "infer":
        return list(memory.add([{"role": "user", "content": turn}], user_id=user, infer=True).refused)
    if path == "observe":
        return list(memory.observe(turn, user_id=user).refused)
    if path == "session":
        from hippocampus.agent.session import Session

        with Session(memory, user, "c1") as session:
            session.add_message("user", turn)
            session.add_message("assistant", "Okay.")
            report = session.save()
        return list(report.refused)
    raise ValueError(f"unknown path {path!r}; one of {', '.join(PATHS)}")


def run_row(memory: Any, row: dict[str, Any], path: str) -> dict[str, Any]:
    """Say the row's turn for a fresh user; what it left in the store and what was refused (any reason:
    `score` counts the instructions' refusals)."""
    user = f"{row['id']}_{path}_{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    error, refused = "", []
    try:
        refused = say(memory, path, row["turn"], user)
    except Exception as exc:  # a path that raises counts as nothing stored, and says why
        error = f"{type(exc).__name__}: {exc}"
    stored = list(memory.get_all(user))
    return {"id": row["id"], "health": row["health"], "stored": [r.text for r in stored],
            "categories": [r.life.category.value for r in stored], "refused": refused, "error": error,
            "seconds": round(time.perf_counter() - started, 2)}


def score(outcomes: Sequence[dict[str, Any]]) -> dict[str, str]:
    """One table row's cells: n/N per column. Pure."""
    health = [o for o in outcomes if o["health"]]
    everyday = [o for o in outcomes if not o["health"]]
    return {
        "health stored": f"{sum(bool(o['stored']) for o in health)}/{len(health)}",
        "everyday kept": f"{sum(bool(o['stored']) for o in everyday)}/{len(everyday)}",
        "everyday refused": f"{sum(any('instructions:' in r for r in o['refused']) for o in everyday)}/{len(everyday)}",
        "filed as diet": f"{sum('diet' in o['categories'] for o in everyday)}/{len(everyday)}",
    }


def render(table: dict[str, dict[str, str]], title: str) -> str:
    """A plain-text table, one line per path and policy. Pure."""
    head = ["path", *COLUMNS]
    rows = [[name, *(cells[c] for c in COLUMNS)] for name, cells in table.items()]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths))  # noqa: E731
    return "\n".join([title, line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def evaluate(rows: Sequence[dict[str, Any]], paths: Sequence[str], policies: Sequence[str], open_memory: Callable[[str, str], Any],
             progress: Callable[[str], None] = lambda s: None) -> dict[str, list[dict[str, Any]]]:
    """Every row through every path under every policy; `open_memory(path, policy)` gives the Memory."""
    results: dict[str, list[dict[str, Any]]] = {}
    for policy in policies:
        for path in paths:
            memory, name = open_memory(path, policy), f"{path}, {policy}"
            try:
                results[name] = []
                for row in rows:
                    outcome = run_row(memory, row, path)
                    results[name].append(outcome)
                    progress(f"{name} {row['id']} stored={outcome['stored']} refused={outcome['refused']} {outcome['error']}")
            finally:
                memory.close()
    return results


def memory_opener(folder: Path, llm: dict[str, Any]) -> Callable[[str, str], Any]:
    """A fresh Memory per path and policy in `folder`, with the offline embedder and `llm` settings (empty: offline)."""
    from hippocampus import Memory
    from hippocampus.embeddings import OfflineEmbedder

    def open_memory(path: str, policy: str) -> Any:
        tag = f"{path}_{'on' if POLICIES[policy] else 'off'}"
        return Memory(milvus_uri=str(folder / f"{tag}.db"), collection_name=f"instr_{tag}", embedder=OfflineEmbedder(),
                      **llm, **POLICIES[policy])

    return open_memory


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(p)
    p.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)} (default all)")
    p.add_argument("--policies", default=",".join(POLICIES), help="comma-separated: 'with instructions', 'without'")
    p.add_argument("--limit", type=int, help="only the first N rows of each kind")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--json", type=Path, help="write the outcomes and the table here")
    p.add_argument("--quiet", action="store_true", help="no per-row progress on stderr")
    args = p.parse_args(argv)
    paths = [s.strip() for s in args.paths.split(",") if s.strip()]
    policies = [s.strip() for s in args.policies.split(",") if s.strip()]
    if not paths or any(s not in PATHS for s in paths):
        p.error(f"--paths takes {', '.join(PATHS)}; got {args.paths!r}")
    if not policies or any(s not in POLICIES for s in policies):
        p.error(f"--policies takes {', '.join(POLICIES)}; got {args.policies!r}")
    llm, model_line = model_settings(p, args)
    rows = load_rows(args.data)
    if args.limit:
        rows = [r for r in rows if r["health"]][: args.limit] + [r for r in rows if not r["health"]][: args.limit]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="eval_instructions_") as folder:
        progress = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
        results = evaluate(rows, paths, policies, memory_opener(Path(folder), llm), progress)
    table = {name: score(outcomes) for name, outcomes in results.items()}
    print(render(table, f"instructions set ({len(rows)} turns), {model_line}, {time.perf_counter() - started:.0f} s"))
    for name, outcomes in results.items():
        leaks = [f"{o['id']}: {o['stored']}" for o in outcomes if o["health"] and o["stored"]]
        if leaks and name.endswith("with instructions"):
            print(f"{name} health stored: " + " | ".join(leaks))
    if args.json:
        args.json.write_text(json.dumps({"model": model_line, "table": table, "outcomes": results}, ensure_ascii=False, indent=1),
                             encoding="utf-8")
    return 0
