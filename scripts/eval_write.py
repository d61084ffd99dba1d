"""The write decision section of scripts/eval_processors.py (tests/data/eval_write_decider.jsonl).

Each case is a turn (user and maybe assistant messages), the label `write_episodic`, a `kind`
and a `split`. The model is asked once per turn; the same answers also give the production
path, the rules gate (hippocampus/processors/gate.py) with the model behind it, whose model calls
per turn are the turns the gate left to the model. Hard kinds are those where a small model and
the rules were seen to fail: knowledge questions, requests, jokes and laughter (not to be stored),
questions that carry a personal fact and life events told without "I am" (to be stored).
"""

from __future__ import annotations

import time
from typing import Any

from hippocampus.errors import LLMError
from hippocampus.llm import ChatModel
from hippocampus.llm.rules import RulesProvider
from hippocampus.processors import EpisodicWriteDecider
from hippocampus.processors.gate import gate
from scripts.eval_common import Confusion, prompts_dir, ratio

WRITE_NOW = "2026-03-01T10:00:00+00:00"
HARD_KINDS = frozenset({"knowledge_question", "request", "joke_laughter", "personal_question", "life_event"})
WRITE_METRICS = ["accuracy", "precision", "recall", "accuracy_hard", "accuracy_en", "accuracy_zh", "gated_accuracy",
                 "gated_precision", "gated_recall", "gated_accuracy_hard", "model_calls_per_turn", "errors", "cases"]


def decide(decider: EpisodicWriteDecider, case: dict[str, Any]) -> bool | None:
    """The decider's write_episodic for this case, None when the model failed (LLMError)."""
    try:
        return decider.decide("eval", case["turns"], now_iso=WRITE_NOW).write_episodic
    except LLMError:
        return None


def write_metrics(cases: list[dict[str, Any]], decisions: list[bool | None]) -> dict[str, float]:
    """Accuracy, precision, recall, per language, per kind and on the hard kinds; None is a failed case."""
    tally, errors = Confusion(), 0
    for case, got in zip(cases, decisions):
        errors += got is None
        kind = case.get("kind")
        groups = [f"accuracy_{case.get('lang', '?')}"] + ([f"accuracy_kind_{kind}"] if kind else [])
        tally.add(got, bool(case["write_episodic"]), *groups, *(["accuracy_hard"] if kind in HARD_KINDS else []))
    n = len(cases)
    out = tally.metrics(n)
    out.update({"errors": errors, "cases": n})
    return out


def wrong_ids(cases: list[dict[str, Any]], decisions: list[bool | None]) -> list[str]:
    """The ids of the cases decided wrongly or not at all, so a run can be read case by case."""
    return [case["id"] for case, got in zip(cases, decisions) if got is not bool(case["write_episodic"])]


def eval_write_decider(llm: ChatModel, cases: list[dict[str, Any]]) -> dict[str, float]:
    """The model alone (accuracy, precision, recall, ...) and gate + model (gated_*), one model run."""
    decider = EpisodicWriteDecider(llm, prompts_dir())
    alone = [decide(decider, case) for case in cases]
    verdicts = [gate(case["turns"], WRITE_NOW) for case in cases]
    gated = [alone[i] if v is None else v.write_episodic for i, v in enumerate(verdicts)]
    out = write_metrics(cases, alone)
    with_gate = write_metrics(cases, gated)
    out.update({"wrong": wrong_ids(cases, alone), "gated_wrong": wrong_ids(cases, gated)})  # in --json, for reading case by case
    out.update({f"gated_{k}": with_gate[k] for k in ("accuracy", "precision", "recall", "accuracy_hard") if k in with_gate})
    decided = [(v, c) for v, c in zip(verdicts, cases) if v is not None]
    out.update({"model_calls_per_turn": ratio(len(cases) - len(decided), len(cases)), "gate_decided": len(decided),
                "gate_right": sum(v.write_episodic is bool(c["write_episodic"]) for v, c in decided)})
    return out


# ------------------------------------------------------------------ write paths (--gate)
WRITE_PATHS = ("rules alone", "model alone", "gate + model")
WRITE_PATH_METRICS = ["accuracy", "precision", "recall", "accuracy_hard", "accuracy_en", "accuracy_zh", "errors",
                      "model_calls_per_turn", "seconds_per_turn", "gate_decided", "gate_right"]


def compare_write_paths(model: ChatModel, cases: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The write decision three ways on the same turns. The model is asked once per turn; gate + model
    takes the gate's decision where it is certain and that same model answer elsewhere, so its model
    calls and seconds are those of the turns the gate left to the model (one model run, not two)."""
    rules, decider = EpisodicWriteDecider(RulesProvider()), EpisodicWriteDecider(model, prompts_dir())
    got: dict[str, list[bool | None]] = {path: [] for path in WRITE_PATHS}
    seconds = dict.fromkeys(WRITE_PATHS, 0.0)
    calls = dict.fromkeys(WRITE_PATHS, 0)
    gated = gated_right = 0
    for case in cases:
        start = time.perf_counter()
        got["rules alone"].append(decide(rules, case))
        seconds["rules alone"] += time.perf_counter() - start
        start = time.perf_counter()
        answer = decide(decider, case)
        model_s = time.perf_counter() - start
        got["model alone"].append(answer)
        seconds["model alone"] += model_s
        calls["model alone"] += 1
        start = time.perf_counter()
        decided = gate(case["turns"], WRITE_NOW)
        seconds["gate + model"] += time.perf_counter() - start
        if decided is None:
            got["gate + model"].append(answer)
            seconds["gate + model"] += model_s
            calls["gate + model"] += 1
        else:
            got["gate + model"].append(decided.write_episodic)
            gated += 1
            gated_right += decided.write_episodic is bool(case["write_episodic"])
    out = {}
    for path in WRITE_PATHS:
        metrics = write_metrics(cases, got[path])
        metrics.update({"model_calls_per_turn": ratio(calls[path], len(cases)), "seconds_per_turn": ratio(seconds[path], len(cases)),
                        "wrong": wrong_ids(cases, got[path])})
        if path == "gate + model":
            metrics.update({"gate_decided": gated, "gate_right": gated_right})
        out[path] = metrics
    return out


def print_write_paths(paths: dict[str, dict[str, float]], model_label: str, cases: int, fmt: Any = str) -> None:
    print(f"\nwrite decision, {cases} turns (model: {model_label})")
    rows = [[m, *(fmt(paths[p].get(m, float("nan"))) if m in paths[p] else "-" for p in WRITE_PATHS)] for m in WRITE_PATH_METRICS]
    header = ["metric", *WRITE_PATHS]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
