"""Accuracy of the cognitive processors on the labelled bilingual sets in tests/data/,
for the offline rules provider and, side by side, any OpenAI-compatible endpoint.

    python scripts/eval_processors.py                                  # rules provider only
    python scripts/eval_processors.py --base-url http://127.0.0.1:8088/v1 --model qwen2.5-coder-1.5b \
        --response-format json_object_schema --limit 20 --json /tmp/eval.json

Sections live in a registry: each has a data file (JSON lines) and an `evaluate(llm, cases)`
that returns its metrics (the first is the headline). Besides the built-in ones below, every
`scripts/eval_sections/*.py` that defines `register(add)` is loaded and calls
`add(name, data_file, evaluate, metrics)`; that is how the merge-or-separate section plugs in.
A case the model fails on (LLMError after retries) counts as wrong and as an error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from hippocampus.errors import LLMError  # noqa: E402
from hippocampus.llm import ChatModel, LLMClient  # noqa: E402
from hippocampus.llm.rules import RulesProvider  # noqa: E402
from hippocampus.models import MemoryRecord  # noqa: E402
from hippocampus.processors import EpisodicReconsolidator, EpisodicWriteDecider, SemanticWriter  # noqa: E402

Evaluate = Callable[[ChatModel, list[dict[str, Any]]], dict[str, float]]


@dataclass
class Section:
    name: str
    data: str  # file name in tests/data/
    evaluate: Evaluate
    metrics: list[str] = field(default_factory=list)  # shown in this order; the first is the headline


SECTIONS: dict[str, Section] = {}


def add(name: str, data: str, evaluate: Evaluate, metrics: list[str]) -> None:
    """Register a section (also called by plug-ins in scripts/eval_sections/)."""
    SECTIONS[name] = Section(name, data, evaluate, list(metrics))


def _ratio(num: float, den: float) -> float:
    return num / den if den else float("nan")


def _has(text: str, keyword: str) -> bool:
    norm = lambda s: unicodedata.normalize("NFKC", s).casefold()  # noqa: E731
    return norm(keyword) in norm(text)


def _record(memory: dict[str, Any], cid: str) -> MemoryRecord:
    meta = {"context": memory.get("context", ""), "thing": memory.get("thing", memory["text"]), "time": memory.get("time", ""),
            "chatid": "eval", "who": "user"}
    return MemoryRecord(id=abs(hash(cid)) % 10**9, user_id="eval", memory_type="episodic", ts=0, chat_id="eval", who="user",
                        text=memory["text"], metadata=meta)


# ------------------------------------------------------------------ built-in sections
def eval_write_decider(llm: ChatModel, cases: list[dict[str, Any]]) -> dict[str, float]:
    decider = EpisodicWriteDecider(llm)
    tp = fp = fn = tn = errors = 0
    by_lang: dict[str, list[int]] = {}
    for case in cases:
        try:
            got = decider.decide("eval", case["turns"], now_iso="2026-03-01T10:00:00+00:00").write_episodic
        except LLMError:
            errors += 1
            got = None
        want = bool(case["write_episodic"])
        ok = got is want
        tp += ok and want
        tn += ok and not want
        fp += (got is True) and not want
        fn += (got is not True) and want
        by_lang.setdefault(case.get("lang", "?"), []).append(int(ok))
    n = len(cases)
    out = {"accuracy": _ratio(tp + tn, n), "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn)}
    out.update({f"accuracy_{lang}": _ratio(sum(v), len(v)) for lang, v in sorted(by_lang.items())})
    out.update({"errors": errors, "cases": n})
    return out


def eval_reconsolidator(llm: ChatModel, cases: list[dict[str, Any]]) -> dict[str, float]:
    rec = EpisodicReconsolidator(llm)
    right = content_ok = should_change = errors = 0
    for case in cases:
        try:
            result = rec.reconsolidate(_record(case["memory"], case["id"]), case["conversation"], now_iso="2026-03-02T10:00:00+00:00")
        except LLMError:
            errors += 1
            continue
        ok = result.changed is bool(case["changed"])
        if case["changed"]:
            should_change += 1
            text = " ".join([result.text, result.thing, result.update_desc])
            good = ok and all(_has(text, k) for k in case.get("expect", []))
            content_ok += good
            ok = good
        right += ok
    n = len(cases)
    return {"accuracy": _ratio(right, n), "change_detected_and_written": _ratio(content_ok, should_change), "errors": errors, "cases": n}


def eval_semantic(llm: ChatModel, cases: list[dict[str, Any]]) -> dict[str, float]:
    writer = SemanticWriter(llm)
    expected_total = found = predicted_total = predicted_ok = exact = errors = 0
    for case in cases:
        expected = case["expected"]  # each expected fact: keywords that must all appear in one extracted fact
        expected_total += len(expected)
        try:
            facts = [f.fact for f in writer.extract(_record(case["episode"], case["id"]), case.get("existing_facts", [])).facts]
        except LLMError:
            errors += 1
            continue
        matched = [any(all(_has(f, k) for k in kws) for f in facts) for kws in expected]
        useful = [any(all(_has(f, k) for k in kws) for kws in expected) for f in facts]
        found += sum(matched)
        predicted_total += len(facts)
        predicted_ok += sum(useful)
        exact += all(matched) and all(useful)
    n = len(cases)
    return {"episodes_exact": _ratio(exact, n), "fact_recall": _ratio(found, expected_total),
            "fact_precision": _ratio(predicted_ok, predicted_total), "errors": errors, "cases": n}


add("write_decider", "eval_write_decider.jsonl", eval_write_decider, ["accuracy", "precision", "recall", "accuracy_en", "accuracy_zh", "errors", "cases"])
add("reconsolidator", "eval_reconsolidator.jsonl", eval_reconsolidator, ["accuracy", "change_detected_and_written", "errors", "cases"])
add("semantic_writer", "eval_semantic.jsonl", eval_semantic, ["episodes_exact", "fact_recall", "fact_precision", "errors", "cases"])


def load_plugins(folder: Path = ROOT / "scripts" / "eval_sections") -> None:
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        spec = importlib.util.spec_from_file_location(f"eval_sections.{path.stem}", path)
        if spec and spec.loader:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if hasattr(module, "register"):
                module.register(add)


# ------------------------------------------------------------------ running and printing
def load_cases(data_dir: Path, section: Section, limit: int | None) -> list[dict[str, Any]]:
    path = data_dir / section.data
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not limit or limit >= len(cases):
        return cases
    step = len(cases) / limit  # evenly spaced, so a limited run still covers both languages and labels
    return [cases[int(i * step)] for i in range(limit)]


def run_provider(label: str, llm: ChatModel, sections: list[Section], data_dir: Path, limit: int | None) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for section in sections:
        cases = load_cases(data_dir, section, limit)
        calls_before, start = getattr(llm, "calls", 0), time.perf_counter()
        metrics = section.evaluate(llm, cases)
        seconds = time.perf_counter() - start
        metrics["seconds_per_case"] = seconds / max(1, len(cases))
        metrics["llm_requests"] = getattr(llm, "calls", 0) - calls_before
        out[section.name] = metrics
        print(f"  [{label}] {section.name}: {len(cases)} cases in {seconds:.1f}s", file=sys.stderr)
    return out


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if value != value else (f"{value:.3f}" if abs(value) < 10 else f"{value:.0f}")
    return str(value)


def print_table(results: dict[str, dict[str, dict[str, float]]], sections: list[Section]) -> None:
    labels = list(results)
    rows = []
    for section in sections:
        for metric in [*section.metrics, "seconds_per_case", "llm_requests"]:
            rows.append([section.name, metric, *(fmt(results[lab].get(section.name, {}).get(metric, float("nan"))) for lab in labels)])
    header = ["section", "metric", *labels]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    print(line(header))
    print("  ".join("-" * w for w in widths))
    last = None
    for r in rows:
        print(line([r[0] if r[0] != last else "", *r[1:]]))
        last = r[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint to compare with the rules provider")
    p.add_argument("--model", help="model name at --base-url")
    p.add_argument("--api-key", default=os.environ.get("HIPPOCAMPUS_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY", ""))
    p.add_argument("--response-format", default="json_schema", choices=["json_schema", "json_object_schema", "json_object", "none"],
                   help="json_object_schema for llama-cpp-python servers")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--retries", type=int, default=2, help="attempts per case for the endpoint (unusable replies included)")
    p.add_argument("--limit", type=int, help="at most N cases per section, evenly spaced over the set")
    p.add_argument("--only", action="append", help="run only this section (repeatable)")
    p.add_argument("--no-rules", action="store_true", help="skip the rules provider column")
    p.add_argument("--data-dir", type=Path, default=ROOT / "tests" / "data")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)

    load_plugins()
    sections = [s for name, s in SECTIONS.items() if not args.only or name in args.only]
    if not sections:
        p.error(f"no such section; known: {', '.join(SECTIONS)}")
    results: dict[str, dict[str, dict[str, float]]] = {}
    if not args.no_rules:
        results["rules"] = run_provider("rules", RulesProvider(), sections, args.data_dir, args.limit)
    if args.base_url:
        if not args.model:
            p.error("--base-url needs --model")
        client = LLMClient(model=args.model, base_url=args.base_url, api_key=args.api_key, timeout_s=args.timeout,
                           max_retries=args.retries, retry_base_delay_s=0.5, response_format=args.response_format)
        results[args.model] = run_provider(args.model, client, sections, args.data_dir, args.limit)
    print_table(results, sections)
    if args.json:
        args.json.write_text(json.dumps({"limit": args.limit, "results": results}, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
