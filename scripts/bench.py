#!/usr/bin/env python
"""Speed of the memory store at 1k, 10k and 100k memories over 100 users, against a numpy floor.

    python scripts/bench.py                        # 1k,10k,100k
    python scripts/bench.py --sizes 1k,10k --queries 200
    python scripts/bench.py --sizes 10k --embed-max 300 --queries 50 --embedder local --model-path ~/.hippocampus/models/embeddinggemma-300m
    python scripts/bench.py --sizes 10k --queries 100 --crosslang both  # the default beside cross-language off (issue 41)

`--crosslang both` (the default) runs every size twice, the default configuration and then with the
cross-language embedder off (HIPPOCAMPUS_CROSSLANG_EMBEDDER=none), and prints the two rows side by
side with a row of their ratios (default / off): what the bilingual default costs, as a regression
benchmark (tests/scripts run it at a tiny size for the table's shape, never for its timings).

Per size, in a fresh subprocess (so peak RSS is that size's own):
- the first add of the process (what a store's first write loads: the default's cross-language model);
- add throughput: Memory.add (infer=False, one turn per call, embedding included; after the first) and
  Memory.add_many (batched embedding) on real texts;
- embedding throughput of the offline embedder (passages in batches, single queries);
- bulk load: up to `--embed-max` rows go through add_many with real embeddings; beyond that, rows
  reuse those real vectors plus small noise and are inserted straight into the store (embedding
  100k texts would take ~11 minutes here); the table says how many rows were embedded;
- open time of the store holding N rows;
- search p50/p99 with a user filter, top 10: dense with the query embedding excluded and included,
  hybrid excluded, and dense with the opt-in neighbour bonus of the context stage, which shows what
  its extra store query costs (a user's embedded rows share chat "default" and the synthetic ones
  chat "bench"; one row per second across the 100 users, so ~100 s apart within a user's chat);
- the floor: numpy brute-force cosine over the same N vectors with the same user mask (full scan,
  argpartition), printed with the ratio dense / floor.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SUBJECTS = ["I", "My sister", "Our team", "The landlord", "My doctor", "We", "My manager", "The kids"]
VERBS = ["booked", "cancelled", "moved", "fixed", "bought", "planned", "visited", "forgot", "discussed", "painted"]
OBJECTS = ["the trip to Lisbon", "a new laptop", "the kitchen sink", "the redis cluster", "piano lessons",
           "the quarterly budget", "a birthday party", "the garden fence", "a flight to Tokyo", "the car service"]
WHEN = ["last Monday", "in May", "yesterday", "two weeks ago", "on Friday", "this morning", "in 2022", "at noon"]
ZH = ["我上周去了杭州", "我对花生过敏", "公司年会在十二月", "我喜欢看电影", "我们计划去北京旅行", "我的猫叫小米"]


def floor_latencies(vectors: np.ndarray, owners: np.ndarray, queries: np.ndarray, users: np.ndarray, k: int = 10) -> list[float]:
    """Seconds per query of the numpy floor: one full matrix product, the user's mask, top k.
    Run it in its own loop: its BLAS threads keep spinning afterwards and slow whatever comes next."""
    out = []
    for v, u in zip(queries, users):
        t0 = time.perf_counter()
        sims = vectors @ v
        sims[owners != u] = -np.inf
        top = np.argpartition(-sims, k)[:k]
        top[np.argsort(-sims[top])]
        out.append(time.perf_counter() - t0)
    return out


def texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if i % 7 == 3:
            out.append(f"{ZH[rng.integers(len(ZH))]}，第{i}条记录")
        else:
            out.append(f"{SUBJECTS[rng.integers(len(SUBJECTS))]} {VERBS[rng.integers(len(VERBS))]} "
                       f"{OBJECTS[rng.integers(len(OBJECTS))]} {WHEN[rng.integers(len(WHEN))]} (note {i})")
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q)) if values else float("nan")


def make_embedder(kind: str = "offline", model_path: str | None = None) -> Any:
    """The offline e5 (default) or a local sentence-transformers folder (--embedder local --model-path)."""
    if kind == "offline":
        from hippocampus.embeddings import OfflineEmbedder

        return OfflineEmbedder()
    if not model_path:
        raise SystemExit("--embedder local needs --model-path")
    from hippocampus.embeddings.local import LocalEmbedder

    return LocalEmbedder(Path(model_path).expanduser())


PHASES = ("e5 loaded", "100 adds", "add_many", "bulk load", "reopened", "searches")  # where RSS is read (--one)


def rss_now_and_peak() -> tuple[float, float]:
    """This process's resident MB now (Linux /proc; nan elsewhere) and its peak so far."""
    try:
        with open("/proc/self/statm") as fh:
            now = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        now = float("nan")
    return now, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_one(n: int, users: int, queries: int, embed_max: int, embedder: str = "offline", model_path: str | None = None) -> dict[str, Any]:
    from hippocampus import Memory
    from hippocampus.retrieval import Retriever

    out: dict[str, Any] = {"n": n, "users": users, "rss_phases": {}}

    def phase(name: str) -> None:
        out["rss_phases"][name] = rss_now_and_peak()

    emb = make_embedder(embedder, model_path)
    out["embedder"] = emb.model_name
    emb.encode(["warm up"], role="query")
    phase("e5 loaded")
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        path = str(Path(tmp) / "m.db")
        mem = Memory(milvus_uri=path, embedder=emb)
        # add (one call per turn) on a small sample, in its own user. The first add is timed apart: it loads what a
        # store's first write loads (the cross-language model of the default, as e5 was loaded above), a cost paid
        # once per process, which inside the sample's rate read as a slower add (docs/decisions.md, "Adds timed
        # after the first")
        t0 = time.perf_counter()
        mem.add("The first memory of this process.", user_id="bench-add", infer=False)
        out["first_add_s"] = time.perf_counter() - t0
        sample = texts(min(100, n), seed=1)
        t0 = time.perf_counter()
        for t in sample:
            mem.add(t, user_id="bench-add", infer=False)
        out["add_per_s"] = len(sample) / (time.perf_counter() - t0)
        phase("100 adds")
        mem.reset("bench-add")
        # embedded bulk load through add_many
        n_real = min(n, embed_max)
        base = texts(n_real, seed=2)
        rng = np.random.default_rng(3)
        owner = rng.integers(users, size=n)
        t0 = time.perf_counter()
        mem.add_many([{"text": t, "user_id": f"user-{owner[i]}", "ts": 1_700_000_000 + i} for i, t in enumerate(base)])
        out["add_many_per_s"] = n_real / (time.perf_counter() - t0)
        out["embedded_rows"] = n_real
        phase("add_many")
        t0 = time.perf_counter()
        passages = emb.encode(base[: min(500, n_real)], role="passage")
        out["embed_passages_per_s"] = len(passages) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        matrix = add_synthetic(mem, n, base, owner, rng)
        if n > n_real:
            out["store_insert_rows_per_s"] = (n - n_real) / (time.perf_counter() - t0)
        phase("bulk load")
        mem.close()
        t0 = time.perf_counter()
        mem = Memory(milvus_uri=path, embedder=emb)
        out["open_s"] = time.perf_counter() - t0
        out["rows"] = mem.store.count("")
        phase("reopened")
        # queries: real query embeddings
        qtexts = texts(queries, seed=4)
        t0 = time.perf_counter()
        qvecs = np.stack([emb.encode([q], role="query")[0] for q in qtexts])
        out["embed_queries_per_s"] = queries / (time.perf_counter() - t0)
        quser = rng.integers(users, size=queries)
        lat: dict[str, list[float]] = {"dense_excl": [], "dense_incl": [], "hybrid_excl": [], "dense_neighbours_excl": [], "floor": []}
        ctx = dataclasses.replace(mem.retriever.params.context, neighbour_weight=0.3)
        with_neighbours = Retriever(mem.store, emb, dataclasses.replace(mem.retriever.params, context=ctx))
        for q, v, u in zip(qtexts, qvecs, quser):
            user = f"user-{u}"
            t0 = time.perf_counter()
            mem.retriever.search(q, user, 10, query_vector=v, mode="dense")
            lat["dense_excl"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mem.search(q, user_id=user, limit=10, memory_type="episodic", mode="dense")
            lat["dense_incl"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mem.retriever.search(q, user, 10, query_vector=v, mode="hybrid")
            lat["hybrid_excl"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with_neighbours.search(q, user, 10, query_vector=v, mode="dense")  # what the opt-in neighbour query costs
            lat["dense_neighbours_excl"].append(time.perf_counter() - t0)
        # The floor runs in its own loop: numpy's BLAS threads keep spinning after a large matmul,
        # and interleaved with the searches they took the cores from the embedder's OpenMP threads
        # (measured: +emb p50 31 ms interleaved, 22 ms with OPENBLAS_NUM_THREADS=1, 10k rows).
        phase("searches")
        lat["floor"] = floor_latencies(matrix, owner, qvecs, quser)
        for key, values in lat.items():
            out[f"{key}_p50_ms"] = pct(values, 50)
            out[f"{key}_p99_ms"] = pct(values, 99)
        out["ratio_dense_to_floor"] = out["dense_excl_p50_ms"] / out["floor_p50_ms"]
        mem.close()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def add_synthetic(mem: Any, n: int, base: list[str], owner: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The store's real vectors back in id order, then rows up to `n` made of a real vector plus
    noise (re-normalised) with that row's text, straight into the store; returns every vector
    (real first), which the numpy floor searches."""
    real = {int(r["id"]): r["vector"] for page in mem.store.iterate("", ["id", "vector"], batch=5000) for r in page}
    n_real, dim = len(real), mem.embedder.dim
    matrix = np.zeros((n, dim), dtype=np.float32)
    matrix[:n_real] = np.stack([np.asarray(real[i], dtype=np.float32) for i in sorted(real)])
    if n > n_real:
        src = rng.integers(n_real, size=n - n_real)
        noisy = matrix[src] + rng.normal(scale=0.02, size=(n - n_real, dim)).astype(np.float32)
        matrix[n_real:] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
        for start in range(n_real, n, 5000):
            mem.store.insert([
                {"user_id": f"user-{owner[i]}", "memory_type": "episodic", "ts": 1_700_000_000 + i, "chat_id": "bench",
                 "who": f"user-{owner[i]}", "text": base[src[i - n_real]], "hit_count": 0, "metadata": {},
                 "vector": matrix[i].tolist()}
                for i in range(start, min(n, start + 5000))
            ])
    return matrix


def parse_size(s: str) -> int:
    s = s.strip().lower()
    return int(float(s[:-1]) * 1000) if s.endswith("k") else int(s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1k,10k,100k")
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embed-max", type=int, default=2000, help="rows embedded for real; the rest reuse those vectors")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--embedder", choices=("offline", "local"), default="offline")
    ap.add_argument("--model-path", help="--embedder local: a sentence-transformers folder")
    ap.add_argument("--crosslang", choices=("both", "auto", "off"), default="both",
                    help="both: the default and cross-language off, side by side with ratios")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.users, args.queries, args.embed_max, args.embedder, args.model_path)))
        return 0
    variants = {"both": ("default", "off"), "auto": ("default",), "off": ("off",)}[args.crosslang]
    results = []
    for size in (parse_size(s) for s in args.sizes.split(",")):
        for variant in variants:
            cmd = [sys.executable, __file__, "--one", str(size), "--users", str(args.users), "--queries", str(args.queries),
                   "--embed-max", str(args.embed_max), "--embedder", args.embedder]
            cmd += ["--model-path", args.model_path] if args.model_path else []
            env = os.environ.copy()
            if variant == "off":
                env["HIPPOCAMPUS_CROSSLANG_EMBEDDER"] = "none"
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            results.append({**json.loads(proc.stdout.strip().splitlines()[-1]), "crosslang": variant})
            print(f"done {size} ({variant})", file=sys.stderr)
    print_table(with_ratios(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def with_ratios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, each size's default row followed by its off row and a row of default / off."""
    out: list[dict[str, Any]] = []
    for r in results:
        out.append(r)
        if r["crosslang"] != "off":
            continue
        default = next((d for d in results if d["n"] == r["n"] and d["crosslang"] == "default"), None)
        if default is not None:
            out.append({"crosslang": "ratio", "n": r["n"], **{k: default[k] / r[k] for k in default
                        if k in r and isinstance(default[k], (int, float)) and isinstance(r[k], (int, float)) and r[k]
                        and k not in ("n", "users")}})
    return out


def print_table(results: list[dict[str, Any]]) -> None:
    cols = [
        ("cross-language", "crosslang", "{}"),
        ("rows", "rows", "{:.0f}"), ("embedded", "embedded_rows", "{:.0f}"), ("first add s", "first_add_s", "{:.2f}"),
        ("add/s", "add_per_s", "{:.1f}"),
        ("add_many/s", "add_many_per_s", "{:.1f}"), ("emb pass/s", "embed_passages_per_s", "{:.0f}"),
        ("emb q/s", "embed_queries_per_s", "{:.0f}"), ("open s", "open_s", "{:.2f}"),
        ("dense p50", "dense_excl_p50_ms", "{:.2f}"), ("dense p99", "dense_excl_p99_ms", "{:.2f}"),
        ("+emb p50", "dense_incl_p50_ms", "{:.2f}"), ("+emb p99", "dense_incl_p99_ms", "{:.2f}"),
        ("hybrid p50", "hybrid_excl_p50_ms", "{:.2f}"), ("+neighbours p50", "dense_neighbours_excl_p50_ms", "{:.2f}"),
        ("floor p50", "floor_p50_ms", "{:.2f}"),
        ("ratio", "ratio_dense_to_floor", "{:.1f}x"), ("RSS MB", "peak_rss_mb", "{:.0f}"),
    ]
    print("| " + " | ".join(c[0] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for r in results:
        ratio = r.get("crosslang") == "ratio"
        cells = []
        for _, key, fmt in cols:
            value = r.get(key, float("nan"))
            if key == "crosslang":
                cells.append("default / off" if ratio else str(value))
            elif key == "rows" and ratio:
                cells.append(f"{r['n']:.0f}")
            elif ratio:
                cells.append(f"{value:.2f}x")
            else:
                cells.append(fmt.format(value))
        print("| " + " | ".join(cells) + " |")
    print("latencies in ms, user-filtered top 10, default configuration ('off': HIPPOCAMPUS_CROSSLANG_EMBEDDER=none; "
          "'default / off': each figure's ratio); '+neighbours' = dense with the opt-in "
          "neighbour bonus (rank_neighbour_weight=0.3); 'floor' = numpy full scan with the same user mask")
    measured = [r for r in results if r.get("rss_phases")]
    if measured:
        print()
        print("| cross-language | rows | " + " | ".join(PHASES) + " |")
        print("|" + "---|" * (len(PHASES) + 2))
        for r in measured:
            cells = [f"{r['rss_phases'][p][0]:.0f} / {r['rss_phases'][p][1]:.0f}" if p in r["rss_phases"] else "" for p in PHASES]
            print(f"| {r['crosslang']} | {r.get('rows', r['n']):.0f} | " + " | ".join(cells) + " |")
        print("resident MB after each phase of that process, now / peak so far ('searches': after the timed searches)")


if __name__ == "__main__":
    sys.exit(main())
