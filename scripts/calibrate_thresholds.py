"""Derive the consolidation thresholds (t_merge_high, t_amb_low) for an embedding model.

Input: bilingual pairs labelled same_event / related / unrelated (JSON lines with
"a", "b", "label"). Each pair is embedded with the configured embedder (passage role,
as stored memories are) and its cosine similarity measured.

- t_amb_low: every pair at or above it reaches a processor and is rewritten unless
  merged, so it must keep unrelated pairs out while letting look-alike pairs
  (related: same kind, different event) in: the value that best splits related from
  unrelated (maximum balanced accuracy, midpoint of the gap).
- t_merge_high proposes merge candidates. Similarity cannot tell a duplicate from a
  different event of the same kind (the Merger judges that), so it only has to keep
  the recall of same-event pairs high: the largest value (step 0.005) that keeps at
  least --merge-recall of them, but never below t_amb_low + 0.005.

    python scripts/eval.py calibrate                       # offline e5
    python scripts/eval.py calibrate --json out.json
    HIPPOCAMPUS_EMBEDDING_PROVIDER=openai ... python scripts/eval.py calibrate
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from hippocampus.config import MemoryConfig
from hippocampus.embeddings import make_embedder

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "calibration_pairs.jsonl"
LABELS = ("same_event", "related", "unrelated")


def load_pairs(path: Path) -> list[dict]:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = [p for p in pairs if p.get("label") not in LABELS]
    if bad:
        raise SystemExit(f"{path}: unknown labels {sorted({p.get('label') for p in bad})}")
    return pairs


def similarities(pairs: list[dict], embedder) -> np.ndarray:
    texts = [p["a"] for p in pairs] + [p["b"] for p in pairs]
    vecs = embedder.encode(texts, role="passage")
    n = len(pairs)
    return np.sum(vecs[:n] * vecs[n:], axis=1)


def choose_merge(same: np.ndarray, recall: float) -> float:
    """Largest threshold (step 0.005) keeping at least `recall` of the same-event pairs."""
    keep = max(1, math.ceil(recall * len(same)))
    value = float(np.sort(same)[::-1][keep - 1])
    return math.floor(value / 0.005) * 0.005


def choose_ambiguous(related: np.ndarray, unrelated: np.ndarray) -> float:
    """The threshold with the best balanced accuracy for related (>=) vs unrelated (<)."""
    candidates = sorted(set(np.round(np.concatenate([related, unrelated]), 4).tolist()))
    best, best_score = candidates[0], -1.0
    for i, c in enumerate(candidates):
        tpr = float(np.mean(related >= c))
        tnr = float(np.mean(unrelated < c))
        score = (tpr + tnr) / 2
        if score > best_score + 1e-9:
            prev = candidates[i - 1] if i else c
            best, best_score = (prev + c) / 2, score
    return round(best, 3)


def _below(pairs: list[dict], sims: np.ndarray, label: str, threshold: float) -> dict[str, str]:
    out: dict[str, list[int]] = {}
    for p, s in zip(pairs, sims):
        if p["label"] == label:
            hit = out.setdefault(p.get("lang", "?"), [0, 0])
            hit[0] += int(s < threshold)
            hit[1] += 1
    return {k: f"{v[0]}/{v[1]}" for k, v in sorted(out.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--merge-recall", type=float, default=0.95, help="share of same-event pairs that must reach t_merge_high")
    ap.add_argument("--json", type=Path, help="also write the table and thresholds here")
    args = ap.parse_args(argv)

    config = MemoryConfig()
    embedder = make_embedder(config)
    pairs = load_pairs(args.data)
    sims = similarities(pairs, embedder)
    by = {label: np.array([s for s, p in zip(sims, pairs) if p["label"] == label]) for label in LABELS}
    low = choose_ambiguous(by["related"], by["unrelated"])
    high = round(max(choose_merge(by["same_event"], args.merge_recall), low + 0.005), 3)

    console = Console()
    table = Table(title=f"similarity by label — {embedder.model_name} ({len(pairs)} pairs, {args.data.name})")
    for col in ("label", "pairs", "min", "median", "max", ">= t_merge_high", "[t_amb_low, t_merge_high)", "< t_amb_low"):
        table.add_column(col, justify="right" if col != "label" else "left")
    for label in LABELS:
        s = by[label]
        table.add_row(
            label, str(len(s)), f"{s.min():.3f}", f"{statistics.median(s.tolist()):.3f}", f"{s.max():.3f}",
            f"{np.mean(s >= high):.0%}", f"{np.mean((s >= low) & (s < high)):.0%}", f"{np.mean(s < low):.0%}",
        )
    console.print(table)

    n_same_high = int(np.sum(by["same_event"] >= high))
    n_all_high = int(sum(np.sum(by[label] >= high) for label in LABELS))
    rel_tp = int(np.sum(by["related"] >= low))
    rel_fp = int(np.sum(by["unrelated"] >= low))
    metrics = Table(title="chosen thresholds")
    for col in ("threshold", "value", "precision", "recall", "meaning"):
        metrics.add_column(col)
    metrics.add_row(
        "t_merge_high", f"{high:.3f}",
        f"{n_same_high / max(1, n_all_high):.2f}", f"{n_same_high / len(by['same_event']):.2f}",
        "same-event pairs proposed to the Merger (which judges same_event)",
    )
    metrics.add_row(
        "t_amb_low", f"{low:.3f}",
        f"{rel_tp / max(1, rel_tp + rel_fp):.2f}", f"{rel_tp / len(by['related']):.2f}",
        "related (same kind, other event) vs unrelated: related pairs reach the Separator",
    )
    console.print(metrics)
    console.print(
        f"config.py DEFAULT_THRESHOLDS[{embedder.model_name!r}] = {{'merge': {high:.3f}, 'ambiguous': {low:.3f}}}\n"
        f"note: {int(np.sum(by['related'] >= high))}/{len(by['related'])} related pairs also reach t_merge_high: "
        "similarity alone cannot tell them from duplicates, the Merger's same_event judgement must.\n"
        f"same-event pairs below t_amb_low by language: {_below(pairs, sims, 'same_event', low)}"
    )
    if args.json:
        out = {
            "model": embedder.model_name,
            "t_merge_high": high,
            "t_amb_low": low,
            "labels": {
                label: {"n": len(s), "min": float(s.min()), "median": float(statistics.median(s.tolist())), "max": float(s.max())}
                for label, s in by.items()
            },
        }
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0
