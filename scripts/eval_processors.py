"""Accuracy of the cognitive processors on the labelled bilingual sets in tests/data/,
for the offline rules provider and, side by side, any OpenAI-compatible endpoint.

    python scripts/eval.py processors                                  # rules provider only (offline)
    python scripts/eval.py processors --split held_out                 # the held-out half of every set
    python scripts/eval.py processors --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \
        --threads 2 --limit 20 --json /tmp/eval.json
    python scripts/eval.py processors --local --split held_out         # the server scripts/local_llm.py started
    python scripts/eval.py processors --gate --only write_decider --base-url ... --model ...   # write paths

Every row of a set has a `split`, "tune" or "held_out" (about half each, balanced by label and
kind): tune prompts and rules on one half and report the other. `--split` picks one (default all).
The write set also has "held_out_2": 80 turns written after the first held-out half had been read
case by case, so that a claim about rules or prompts changed since rests on turns nobody tuned on.

Per section the table shows its own metrics (the first is the headline), then the cost: seconds per
case and per model call, the share of the endpoint's replies that were valid JSON fitting the
schema (n/a for the rules provider), and the requests sent. Write decision: the model alone and the
rules gate (hippocampus/processors/gate.py) in front of it (gated_*, model calls per turn), from one
model run. Merge or separate: merges found, wrong merges, must_keep facts lost. Reconsolidation:
must_keep facts kept and lost by the rewritten memories. `--gate` adds the write decision three ways
side by side: rules alone, the model alone, gate + model (without --base-url the model is the rules
provider, so the wiring runs offline).

Sections live in a registry: each has a data file (JSON lines) and an `evaluate(llm, cases)` that
returns its metrics. Besides the built-in ones, every `scripts/eval_sections/*.py` that defines
`register(add)` is loaded and calls `add(name, data_file, evaluate, metrics)`; that is how the
merge-or-separate section plugs in. A case the model fails on (LLMError after retries) counts as
wrong and as an error. Shared helpers: scripts/eval_common.py; the write decision: scripts/eval_write.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from hippocampus.errors import LLMError  # noqa: E402
from hippocampus.llm import ChatModel, formats  # noqa: E402
from hippocampus.llm.rules import RulesProvider  # noqa: E402
from hippocampus.processors import EpisodicReconsolidator, SemanticWriter  # noqa: E402
from scripts.eval_common import CountingClient, Metered, has, keeps, lost, prompts_dir, ratio, record, set_prompts_dir  # noqa: E402
from scripts.eval_write import (  # noqa: E402,F401  (re-exported: tests and callers import them from here)
    HARD_KINDS,
    WRITE_METRICS,
    WRITE_NOW,
    WRITE_PATHS,
    compare_write_paths,
    decide,
    eval_write_decider,
    print_write_paths,
    write_metrics,
)

Evaluate = Callable[[ChatModel, list[dict[str, Any]]], dict[str, float]]
SPLITS = ("tune", "held_out", "held_out_2", "all")
COST_METRICS = ["seconds_per_case", "seconds_per_call", "valid_json_rate", "llm_requests"]


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


# ------------------------------------------------------------------ built-in sections
def eval_reconsolidator(llm: ChatModel, cases: list[dict[str, Any]]) -> dict[str, float]:
    """`changed` must be judged right; a change must state what `expect` lists (text, thing or
    description), and every rewritten memory must keep its `must_keep` facts (facts_kept, facts_lost)."""
    rec = EpisodicReconsolidator(llm, prompts_dir())
    right = content_ok = should_change = errors = rewrites = checked = facts_lost = guard = 0
    groups: dict[str, list[int]] = {}
    for case in cases:
        old = record(case["memory"], case["id"])
        try:
            result = rec.reconsolidate(old, case["conversation"], now_iso="2026-03-02T10:00:00+00:00")
        except LLMError:
            errors += 1
            continue
        ok = result.changed is bool(case["changed"])
        if case["changed"]:
            should_change += 1
            said = " ".join([result.text, result.thing, result.update_desc])
            ok = ok and all(keeps(said, k) for k in case.get("expect", []))
            content_ok += ok
        right += ok
        groups.setdefault(f"accuracy_{case.get('lang', '?')}", []).append(int(ok))
        groups.setdefault(f"accuracy_kind_{case.get('kind', '?')}", []).append(int(ok))
        if result.changed:  # the memory is rewritten (an empty text keeps the old one)
            items = case.get("must_keep", [])
            rewrites += 1
            checked += len(items)
            facts_lost += len(lost(result.text.strip() or old.text, items))
            guard += getattr(result, "facts_path", "model") != "model"
    n = len(cases)
    out = {"accuracy": ratio(right, n), "change_detected_and_written": ratio(content_ok, should_change),
           "facts_kept": ratio(checked - facts_lost, checked), "facts_lost": facts_lost, "rewrites": rewrites, "guard_stepped_in": guard}
    out.update({name: ratio(sum(v), len(v)) for name, v in sorted(groups.items())})
    out.update({"errors": errors, "cases": n})
    return out


def eval_semantic(llm: ChatModel, cases: list[dict[str, Any]]) -> dict[str, float]:
    writer = SemanticWriter(llm, prompts_dir())
    expected_total = found = predicted_total = predicted_ok = exact = errors = 0
    for case in cases:
        expected = case["expected"]  # each expected fact: keywords that must all appear in one extracted fact
        expected_total += len(expected)
        try:
            facts = [f.fact for f in writer.extract(record(case["episode"], case["id"]), case.get("existing_facts", [])).facts]
        except LLMError:
            errors += 1
            continue
        matched = [any(all(has(f, k) for k in kws) for f in facts) for kws in expected]
        useful = [any(all(has(f, k) for k in kws) for kws in expected) for f in facts]
        found += sum(matched)
        predicted_total += len(facts)
        predicted_ok += sum(useful)
        exact += all(matched) and all(useful)
    n = len(cases)
    return {"episodes_exact": ratio(exact, n), "fact_recall": ratio(found, expected_total),
            "fact_precision": ratio(predicted_ok, predicted_total), "errors": errors, "cases": n}


add("write_decider", "eval_write_decider.jsonl", eval_write_decider, WRITE_METRICS)
add("reconsolidator", "eval_reconsolidator.jsonl", eval_reconsolidator,
    ["accuracy", "change_detected_and_written", "facts_kept", "facts_lost", "rewrites", "guard_stepped_in", "accuracy_en",
     "accuracy_zh", "errors", "cases"])
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
def load_cases(data_dir: Path, section: Section, limit: int | None, split: str = "all") -> list[dict[str, Any]]:
    """The section's cases of one split ("all": every row; a row without a split is in no half),
    then at most `limit` of them, evenly spaced so both languages and labels stay covered."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    path = data_dir / section.data
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if split != "all":
        cases = [c for c in cases if c.get("split") == split]
    if not limit or limit >= len(cases):
        return cases
    step = len(cases) / limit
    return [cases[int(i * step)] for i in range(limit)]


def run_provider(label: str, llm: ChatModel, sections: list[Section], data_dir: Path, limit: int | None,
                 split: str = "all") -> dict[str, dict[str, float]]:
    meter = Metered(llm)
    out: dict[str, dict[str, float]] = {}
    for section in sections:
        cases = load_cases(data_dir, section, limit, split)
        before, start = meter.snapshot(), time.perf_counter()
        metrics = section.evaluate(meter, cases)
        seconds = time.perf_counter() - start
        metrics["seconds_per_case"] = seconds / max(1, len(cases))
        metrics.update(Metered.delta(before, meter.snapshot()))
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
        for metric in [*section.metrics, *COST_METRICS]:
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


def connection(args: argparse.Namespace, p: argparse.ArgumentParser) -> dict[str, Any]:
    """The endpoint this run was given: by flags, by scripts/local_llm.py's state (--local), or none."""
    if args.local:
        if args.base_url:
            p.error("--local reads the server from scripts/local_llm.py's state; leave out --base-url")
        from scripts import local_llm

        state = local_llm.recorded_server(p.error)
        return {"source": f"local state {local_llm.state_path()}", "base_url": state["url"], "model": args.model or state["model"],
                "threads": state.get("threads"), "response_format": args.response_format}
    if args.base_url and not args.model:
        p.error("--base-url needs --model")
    if not args.base_url:
        return {"source": "offline", "base_url": None, "model": None, "threads": None, "response_format": None}
    return {"source": "flags", "base_url": args.base_url, "model": args.model, "threads": args.threads,
            "response_format": args.response_format}


def describe_connection(conn: dict[str, Any], split: str) -> str:
    if not conn["base_url"]:
        return f"model: offline rules provider (no server)  split: {split}"
    threads = conn["threads"] if conn["threads"] is not None else "not given"
    return (f"model: {conn['model']}  server: {conn['base_url']}  threads: {threads}  "
            f"response format: {conn['response_format']}  split: {split}  (from {conn['source']})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint to compare with the rules provider")
    p.add_argument("--model", help="model name at --base-url (with --local: overrides the recorded one)")
    p.add_argument("--threads", type=int, help="CPU threads the server was started with (reported, not sent)")
    p.add_argument("--local", action="store_true", help="the server, model and threads `scripts/local_llm.py serve` recorded")
    p.add_argument("--api-key", default=os.environ.get("HIPPOCAMPUS_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY", ""))
    p.add_argument("--response-format", default="auto", choices=["auto", "json_schema", "json_object_schema", "json_object", "none"],
                   help="auto (default) negotiates what the server accepts (json_object_schema for llama-cpp-python)")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--retries", type=int, default=2, help="attempts per case for the endpoint (unusable replies included)")
    p.add_argument("--retry-delay", type=float, default=0.5, help="seconds before the first retry (doubling after)")
    p.add_argument("--split", default="all", choices=SPLITS, help="which half of every set (default all)")
    p.add_argument("--limit", type=int, help="at most N cases per section, evenly spaced over the set")
    p.add_argument("--only", action="append", help="run only this section (repeatable)")
    p.add_argument("--no-rules", action="store_true", help="skip the rules provider column")
    p.add_argument("--gate", action="store_true", help="the write decision by rules alone, model alone and gate + model, "
                   "side by side (replaces the write_decider section of the main table)")
    p.add_argument("--data-dir", type=Path, default=ROOT / "tests" / "data")
    p.add_argument("--prompts-dir", type=Path, help="read the processors' prompts from this folder where it holds a file "
                   "of the prompt's name (write_decider.yaml, ...), as Memory's prompts_dir does: tune a prompt on "
                   "--split tune, then report --split held_out with the same folder")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)

    load_plugins()
    try:
        overridden = set_prompts_dir(args.prompts_dir)
    except ValueError as exc:
        p.error(str(exc))
    if args.prompts_dir is not None:
        print(f"prompts from {args.prompts_dir}: {', '.join(overridden) or 'none of its files names a prompt'} (others packaged)")
    sections = [s for name, s in SECTIONS.items() if not args.only or name in args.only]
    if not sections:
        p.error(f"no such section; known: {', '.join(SECTIONS)}")
    if args.gate:
        sections = [s for s in sections if s.name != "write_decider"]  # its numbers are the gate table's "alone" columns
    conn = connection(args, p)
    print(describe_connection(conn, args.split))
    client = CountingClient(model=conn["model"], base_url=conn["base_url"], api_key=args.api_key, timeout_s=args.timeout,
                            max_retries=args.retries, retry_base_delay_s=args.retry_delay, response_format=args.response_format) if conn["base_url"] else None
    results: dict[str, dict[str, dict[str, float]]] = {}
    if sections and not args.no_rules:
        results["rules"] = run_provider("rules", RulesProvider(), sections, args.data_dir, args.limit, args.split)
    if sections and client is not None:
        results[conn["model"]] = run_provider(conn["model"], client, sections, args.data_dir, args.limit, args.split)
    if sections:
        print_table(results, sections)
    report: dict[str, Any] = {"limit": args.limit, "split": args.split, "connection": conn, "results": results,
                              "prompts_dir": str(args.prompts_dir) if args.prompts_dir else None, "prompts_overridden": overridden}
    if args.gate:
        cases = load_cases(args.data_dir, SECTIONS["write_decider"], args.limit, args.split)
        label = conn["model"] if client is not None else "rules provider (offline)"
        report["write_paths"] = {"model": label, **compare_write_paths(client or RulesProvider(), cases)}
        print_write_paths(report["write_paths"], label, len(cases), fmt)
    if client is not None and args.response_format == "auto":
        conn["negotiated_format"] = formats.start_mode(conn["base_url"], conn["model"])
        print(f"response format negotiated with {conn['base_url']}: {conn['negotiated_format']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0
