#!/usr/bin/env python
"""Recall on LoCoMo: does `Memory.search` find the turns that answer each question?

For each conversation: a fresh milvus-lite store in a temporary directory, one user per
conversation, chat_id = session, ts = the session's date (shifted so that the conversation ends
now), who = the speaker, every turn stored
with infer=False (batched through Memory.add_many) as "speaker: text" (plus the shared photo's
caption), its dia_id in metadata. Every question of categories 1-4 is searched with its own text
(top 10, episodic) in each mode; a hit is a returned turn whose dia_id is in the evidence.

    python scripts/eval.py locomo                       # all 10 conversations, 3 modes
    python scripts/eval.py locomo --conversations 2     # quick run
    python scripts/eval.py locomo --offset 5            # conversations 6-10 (tune on 1-5, check here)
    python scripts/eval.py locomo --json out.json --variant rrf:hybrid_fusion=rrf
    python scripts/eval.py locomo --pick 0,4 --embedder local --model-path ~/.hippocampus/models/embeddinggemma-300m
    python scripts/eval.py locomo --conversations 5 --modes dense --ceiling 50   # all@50: what a re-ranker could reach

The data (CC BY-NC 4.0) is read from ../shared/bench/locomo/ and never copied into the repo.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hippocampus import Memory
from hippocampus.embeddings import OfflineEmbedder
from hippocampus.models import MemoryType

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "bench" / "locomo" / "locomo10.json"
CATEGORIES = ("1", "2", "3", "4")
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
METRICS = ("hit@5", "hit@10", "all@5", "all@10", "mrr@10")
_DIA = re.compile(r"D:?(\d+):(\d+)")


def session_ts(text: str) -> int:
    """'1:56 pm on 8 May, 2023' -> epoch seconds (UTC)."""
    dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return int(dt.replace(tzinfo=timezone.utc).timestamp())


def normalise_evidence(raw: list[Any], known: set[str]) -> list[str]:
    """SOURCE.md's quirks: several ids in one string, 'D:11:26', 'D30:05', ids of missing turns."""
    out: list[str] = []
    for entry in raw or []:
        for sess, turn in _DIA.findall(str(entry)):
            dia = f"D{int(sess)}:{int(turn)}"
            if dia in known and dia not in out:
                out.append(dia)
    return out


def turns_of(sample: dict[str, Any], now: int | None = None, exchange: int = 0) -> list[dict[str, Any]]:
    """The turns as add_many items; with `now`, dates shift so that the last turn happened at `now`
    (the conversation ends today), which gives the ranking stage's recency term its meaning.
    With `exchange` = n, each memory is the turn with the n turns of its session before it (add's
    `messages` list, as a chat hook that stores the exchange would call it), so "Yes, in April"
    carries its question."""
    conv = sample["conversation"]
    sessions = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    out = []
    for n in sessions:
        ts = session_ts(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            dia = turn["dia_id"]
            m = _DIA.fullmatch(dia)
            dia = f"D{int(m.group(1))}:{int(m.group(2))}" if m else dia
            item = {"text": text, "who": turn["speaker"], "chat_id": f"session_{n}", "ts": ts + i, "metadata": {"dia_id": dia}}
            if exchange and i > 0:
                before = conv[f"session_{n}"][max(0, i - exchange) : i]
                item["messages"] = [{"role": b["speaker"], "content": b["text"]} for b in before]
                item["messages"].append({"role": turn["speaker"], "content": text.split(": ", 1)[1]})
                del item["text"]
            out.append(item)
    if now is not None and out:
        shift = now - max(t["ts"] for t in out)
        for t in out:
            t["ts"] += shift
    return out


def _turns_before(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("--exchange takes a number of turns of 1 or more")
    return n


def parse_variant(spec: str) -> tuple[str, str, dict[str, Any]]:
    """'name:key=value,key=value' -> a mode evaluated with MemoryConfig overrides."""
    name, _, rest = spec.partition(":")
    overrides: dict[str, Any] = {}
    for pair in filter(None, rest.split(",")):
        key, _, value = pair.partition("=")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return name, str(overrides.pop("search_mode", "hybrid")), overrides


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--json", type=Path, help="write the metrics here")
    ap.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--offset", type=int, default=0, help="skip the first N conversations (held-out checks)")
    ap.add_argument("--modes", default="dense,bm25,hybrid")
    ap.add_argument("--exchange", type=_turns_before, nargs="?", const=1, default=0, metavar="N",
                    help="store each turn with the N turns before it (1 if N is left out; one memory per turn still)")
    ap.add_argument("--variant", action="append", default=[],
                    help="extra mode 'name:key=value,...' (MemoryConfig overrides; latency excludes the query embedding)")
    ap.add_argument("--ceiling", type=int, default=0, metavar="N",
                    help="also ask for N hits and report all@N: how often every evidence turn is among the first N "
                         "(the most any re-ranking of N candidates could put in the top 10; the search then gathers N "
                         "candidates, so its top-10 figures may move a little)")
    ap.add_argument("--pick", help="only these conversations, 0-based indices, e.g. 0,4 (after --offset)")
    add_embedder_args(ap)
    ap.add_argument("--graph", action="store_true",
                    help="build each conversation's graph after ingestion and add the mode hybrid+graph (graph: on)")
    ap.add_argument("--graph-llm", metavar="URL", help="--graph: extract triples with this OpenAI-compatible endpoint "
                    "(default: the offline extractor)")
    ap.add_argument("--graph-model", default="local", help="--graph-llm: the model name at that endpoint")
    args = ap.parse_args(argv)

    if args.ceiling and args.ceiling <= 10:
        ap.error("--ceiling takes a depth above 10")
    metrics = (*METRICS, f"all@{args.ceiling}") if args.ceiling else METRICS
    depth = max(10, args.ceiling)
    data = json.loads(args.data.read_text(encoding="utf-8"))[args.offset :]
    if args.pick:
        data = [data[int(i)] for i in args.pick.split(",")]
    data = data[: args.conversations]
    modes: list[tuple[str, str, dict[str, Any]]] = [(m, m, {}) for m in args.modes.split(",") if m]
    n_plain = len(modes)
    modes += [parse_variant(v) for v in args.variant]
    if args.graph:
        modes.append(("hybrid+graph", "hybrid", {"graph": "on"}))
    graph_llm = {"llm_provider": "openai", "llm_base_url": args.graph_llm, "llm_model": args.graph_model} if args.graph_llm else {}
    graph_cost = {"memories": 0, "entities": 0, "triples": 0, "seconds": 0.0, "llm_calls": 0, "errors": 0}
    embedder, settings = make_eval_embedder(args)
    embedder.encode(["warm up"], role="query")

    scores: dict[str, dict[str, list[dict[str, float]]]] = {name: defaultdict(list) for name, _, _ in modes}
    latency: dict[str, list[float]] = defaultdict(list)
    skipped = 0
    turns_total = 0
    ingest_s = 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        for ci, sample in enumerate(data):
            turns = turns_of(sample, now=int(time.time()), exchange=args.exchange)
            known = {t["metadata"]["dia_id"] for t in turns}
            user = str(sample.get("sample_id", f"conv-{ci}"))
            path = str(Path(tmp) / f"c{ci}.db")
            base = Memory(milvus_uri=path, embedder=embedder, **settings)
            t0 = time.perf_counter()
            base.add_many([{**t, "user_id": user} for t in turns])
            ingest_s += time.perf_counter() - t0
            turns_total += len(turns)
            if args.graph:
                build_graph(path, embedder, {**settings, **graph_llm}, user, graph_cost)
            questions = []
            for qa in sample["qa"]:
                cat = str(qa.get("category"))
                if cat not in CATEGORIES:
                    continue
                evidence = normalise_evidence(qa.get("evidence"), known)
                if not evidence:
                    skipped += 1
                    continue
                questions.append((cat, str(qa["question"]), evidence))
            base.close()
            qvec: dict[str, Any] = {}  # variants reuse the query embedding (their latency excludes it)
            for vi, (name, mode, overrides) in enumerate(modes):
                mem = Memory(milvus_uri=path, embedder=embedder, **{**settings, **overrides})
                variant = vi >= n_plain
                for cat, question, evidence in questions:
                    t0 = time.perf_counter()
                    if variant and mode != "bm25":
                        if question not in qvec:
                            qvec[question] = embedder.encode([question], role="query")[0]
                        t0 = time.perf_counter()
                        hits = mem.retriever.search(question, user, depth, MemoryType.EPISODIC, None, qvec[question], mode)
                    else:
                        hits = mem.search(question, user_id=user, limit=depth, memory_type="episodic", mode=mode).episodic
                    latency[name].append(time.perf_counter() - t0)
                    ranked = [h.memory.metadata.get("dia_id") for h in hits]
                    scores[name][cat].append(score(ranked, evidence, args.ceiling))
                mem.close()
            print(f"conversation {ci + 1}/{len(data)} {user}: {len(turns)} turns, {len(questions)} questions", file=sys.stderr)

    report: dict[str, Any] = {}
    for name, _, _ in modes:
        per = scores[name]
        report[name] = {cat: mean_metrics(per[cat], metrics) for cat in CATEGORIES if per[cat]}
        report[name]["overall"] = mean_metrics([s for cat in CATEGORIES for s in per[cat]], metrics)
        lat = latency[name]
        report[name]["latency_ms"] = {"p50": 1000 * percentile(lat, 0.5), "p99": 1000 * percentile(lat, 0.99)}
    n_questions = len([s for cat in CATEGORIES for s in scores[modes[0][0]][cat]])
    meta = {
        "conversations": len(data),
        "turns": turns_total,
        "questions": n_questions,
        "skipped_questions": skipped,
        "ingest_turns_per_s": turns_total / ingest_s if ingest_s else 0.0,
        "exchange": args.exchange,
        "embedder": embedder.model_name,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux: KiB
        "picked": args.pick,
        "modes": {name: {"search_mode": mode, **overrides} for name, mode, overrides in modes},
        **({"graph": {**graph_cost, "extractor": args.graph_llm and f"{args.graph_model} at {args.graph_llm}" or "offline rules"}}
           if args.graph else {}),
    }
    print_table(report, meta, metrics)
    if args.json:
        args.json.write_text(json.dumps({**report, "meta": meta}, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def build_graph(path: str, embedder: Any, settings: dict[str, Any], user: str, cost: dict[str, Any]) -> None:
    """Read the conversation into its graph (offline rules, or the --graph-llm endpoint) and add up the cost."""
    with Memory(milvus_uri=path, embedder=embedder, **settings) as mem:
        stats = mem.build_graph(user, progress=lambda _phase, done, total: print(f"  graph {done}/{total}", file=sys.stderr)
                                if done % 200 < 8 or done == total else None)
        view = mem.graph(user)
    cost["memories"] += stats.memories_read
    cost["entities"] += len(view.entities)
    cost["triples"] += len(view.triples)
    cost["seconds"] += stats.seconds
    cost["llm_calls"] += stats.llm_calls
    cost["errors"] += stats.errors


def add_embedder_args(ap: argparse.ArgumentParser) -> None:
    """--embedder, --model-path, --dim, --threads: what make_eval_embedder reads (the eval scripts share them)."""
    ap.add_argument("--embedder", choices=("offline", "default", "local"), default="offline",
                    help="offline (= default): the bundled e5; local: a sentence-transformers folder (--model-path)")
    ap.add_argument("--model-path", type=Path, help="--embedder local: the model folder")
    ap.add_argument("--dim", type=int, help="--embedder local: truncate to this many dimensions (Matryoshka)")
    ap.add_argument("--threads", type=int, help="--embedder local: torch threads (default: torch's)")
    ap.add_argument("--crosslang", choices=("auto", "off", "on"), default="auto",
                    help="the cross-language vectors beside the embedder (crosslang_embedder): auto = the library's "
                         "default (on with the bundled e5), off, or on whatever the embedder")


def make_eval_embedder(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The embedder the flags ask for and the Memory settings that name it (thresholds are per model)."""
    cross = {"crosslang_embedder": {"auto": "auto", "off": None, "on": "use-multilingual"}[getattr(args, "crosslang", "auto")]}
    if args.embedder in ("offline", "default"):
        return OfflineEmbedder(), cross
    if args.model_path is None:
        raise SystemExit("--embedder local needs --model-path (a sentence-transformers folder)")
    from hippocampus.embeddings.local import LocalEmbedder

    settings = {"embedding_provider": "local", "embedding_model_path": str(args.model_path.expanduser()), **cross}
    settings.update({"embedding_dim": args.dim} if args.dim else {})
    return LocalEmbedder(args.model_path.expanduser(), dim=args.dim, threads=args.threads), settings


def score(ranked: list[str | None], evidence: list[str], ceiling: int = 0) -> dict[str, float]:
    ev = set(evidence)
    out = {}
    if ceiling:
        out[f"all@{ceiling}"] = float(ev <= set(ranked[:ceiling]))
    for k in (5, 10):
        top = set(ranked[:k])
        out[f"hit@{k}"] = float(bool(top & ev))
        out[f"all@{k}"] = float(ev <= top)
    rr = 0.0
    for rank, dia in enumerate(ranked[:10], 1):
        if dia in ev:
            rr = 1.0 / rank
            break
    out["mrr@10"] = rr
    return out


def mean_metrics(rows: list[dict[str, float]], metrics: tuple[str, ...] = METRICS) -> dict[str, float]:
    return {m: (statistics.fmean(r[m] for r in rows) if rows else float("nan")) for m in metrics} | {"n": len(rows)}


def print_table(report: dict[str, Any], meta: dict[str, Any], metrics: tuple[str, ...] = METRICS) -> None:
    print(
        f"\nLoCoMo retrieval: {meta['conversations']} conversations, {meta['turns']} turns, "
        f"{meta['questions']} questions (categories 1-4), {meta['skipped_questions']} skipped (no usable evidence); "
        f"ingestion {meta['ingest_turns_per_s']:.1f} turns/s; embedder {meta.get('embedder')}, peak RSS {meta.get('peak_rss_mb', 0):.0f} MB"
        + (f"; each memory = the turn with the {meta['exchange']} turn(s) before it (--exchange)" if meta.get("exchange") else "")
    )
    g = meta.get("graph")
    if g:
        per = max(g["memories"], 1)
        print(f"graph ({g['extractor']}): {g['memories']} memories read, {g['entities'] / per:.2f} entities and "
              f"{g['triples'] / per:.3f} triples per memory, {1000 * g['seconds'] / per:.1f} s per 1,000 memories, "
              f"{g['llm_calls']} extractor calls, {g['errors']} failed")
    header = f"{'mode':<14}{'category':<16}{'n':>5}" + "".join(f"{m:>9}" for m in metrics) + f"{'p50 ms':>9}{'p99 ms':>9}"
    print(header)
    print("-" * len(header))
    for name, per in report.items():
        for cat in (*CATEGORIES, "overall"):
            if cat not in per:
                continue
            row = per[cat]
            label = "overall" if cat == "overall" else f"{cat} {CATEGORY_NAMES[cat]}"
            line = f"{name:<14}{label:<16}{row['n']:>5}" + "".join(f"{row[m]:>9.3f}" for m in metrics)
            if cat == "overall":
                line += f"{per['latency_ms']['p50']:>9.1f}{per['latency_ms']['p99']:>9.1f}"
            print(line)
