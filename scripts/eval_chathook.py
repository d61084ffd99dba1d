#!/usr/bin/env python
"""Recall on LoCoMo through the path the README recommends: a chat hook calling `add(..., infer=True)`.

`scripts/eval_locomo.py` stores every turn raw (`infer=False`); a user's chat hook does not. Here each
turn of a conversation goes through `Memory.add([{"role": "user", "content": ...}], infer=True)` one at
a time, with its session's date as `ts` (shifted so that the conversation ends now), its speaker as
`who`, its session as `chat_id` and its `dia_id` in metadata; optionally `consolidate` once per
conversation (`--consolidate`), as the nightly job would. Then every question of categories 1-4 is
searched (top 10, every kind of memory). Each turn is added with its `dia_id` as `turn_id`; a hit is a
returned memory whose turns (its `turn_id`, or the `source_turns` a distilled fact or a merge carries from
the turns it came from) include an evidence turn.

    python scripts/eval.py chathook --offset 5                 # conversations 6-10, offline rules
    python scripts/eval.py chathook --conversations 5          # the tune half
    python scripts/eval.py chathook --offset 5 --consolidate   # with one nightly consolidation
    python scripts/local_llm.py serve && python scripts/eval.py chathook --pick 1 --sessions 4 --local
                                     # the local model (Qwen2.5-Coder-1.5B on llama.cpp): slow, so a slice

It prints one table: the raw path (every turn stored as "Speaker: text", as eval_locomo.py does) beside
the chat-hook path, with turns stored, evidence turns kept, hit@5/10, all@5/10. The data (CC BY-NC 4.0)
is read from ../shared/bench/locomo/ and never copied into the repo.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_locomo import CATEGORIES, DEFAULT_DATA, normalise_evidence, turns_of  # noqa: E402

from hippocampus import Memory  # noqa: E402
from hippocampus.consolidation.rules import turn_ids  # noqa: E402
from hippocampus.embeddings import OfflineEmbedder  # noqa: E402

METRICS = ("hit@5", "hit@10", "all@5", "all@10")


def turn_keys(metadata: dict[str, Any]) -> list[str]:
    """The turns a memory came from: its `turn_id` and the `source_turns` a distilled fact or a merge carries."""
    return turn_ids(metadata)


def rank_score(hits: list[Any], evidence: list[str]) -> dict[str, float]:
    """hit@k / all@k over the first k memories (not the first k turn ids)."""
    ev = set(evidence)
    out: dict[str, float] = {}
    for k in (5, 10):
        top = {key for hit in hits[:k] for key in turn_keys(hit.memory.metadata)}
        out[f"hit@{k}"] = float(bool(top & ev))
        out[f"all@{k}"] = float(ev <= top)
    return out


def questions_of(sample: dict[str, Any], known: set[str]) -> list[tuple[str, str, list[str]]]:
    out = []
    for qa in sample["qa"]:
        cat = str(qa.get("category"))
        evidence = normalise_evidence(qa.get("evidence"), known) if cat in CATEGORIES else []
        if evidence:
            out.append((cat, str(qa["question"]), evidence))
    return out


def first_sessions(turns: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The turns of the conversation's first `n` sessions (a slow model's run on a slice of it)."""
    order: list[str] = []
    for t in turns:
        if t["chat_id"] not in order:
            order.append(t["chat_id"])
    keep = set(order[:n])
    return [t for t in turns if t["chat_id"] in keep]


def run_path(path: str, sample_turns: list[dict[str, Any]], user: str, embedder: Any, settings: dict[str, Any],
             chat_hook: bool, consolidate: bool, progress: bool) -> tuple[Memory, dict[str, Any]]:
    """Ingest one conversation the way a path does; returns the open Memory and what was stored."""
    mem = Memory(milvus_uri=path, embedder=embedder, **settings)
    reasons: Counter[str] = Counter()
    t0 = time.perf_counter()
    if not chat_hook:
        mem.add_many([{**t, "user_id": user} for t in sample_turns])
    else:
        for i, t in enumerate(sample_turns):
            said = t["text"].split(": ", 1)[1]
            result = mem.add([{"role": "user", "content": said}], user_id=user, chat_id=t["chat_id"], who=t["who"],
                             metadata=dict(t["metadata"]), infer=True, ts=t["ts"])
            reasons[_reason_key(result.reason) if not result.stored else "stored"] += 1
            if progress and (i + 1) % 100 == 0:
                print(f"  {i + 1}/{len(sample_turns)} turns", file=sys.stderr)
    ingest = time.perf_counter() - t0
    consolidated = None
    if consolidate:
        t1 = time.perf_counter()
        consolidated = mem.consolidate(user_id=user)
        consolidated = {"seconds": time.perf_counter() - t1, "summary": str(consolidated)[:300]}
    return mem, {"ingest_s": ingest, "reasons": reasons, "consolidated": consolidated}


def _reason_key(reason: str) -> str:
    return reason.split(";")[0].split("(")[0].strip()[:60]


def stored_turns(mem: Memory, user: str) -> set[str]:
    """Every turn id some memory of the user carries (get_all: what list and export show)."""
    kept: set[str] = set()
    for record in mem.get_all(user_id=user, include_expired=True):
        kept.update(turn_keys(record.metadata))
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--json", type=Path, help="write the metrics here")
    ap.add_argument("--conversations", type=int, default=None, help="only the first N conversations (after --offset)")
    ap.add_argument("--offset", type=int, default=0, help="skip the first N conversations (5: the held-out half)")
    ap.add_argument("--pick", help="only these conversations, 0-based indices after --offset, e.g. 0,4")
    ap.add_argument("--sessions", type=int, default=None,
                    help="only the first N sessions of each conversation, and the questions they answer in full")
    ap.add_argument("--consolidate", action="store_true", help="run consolidate once per conversation after ingestion")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw path (the chat-hook rows only)")
    ap.add_argument("--local", action="store_true", help="decide with the local model `scripts/local_llm.py serve` recorded")
    ap.add_argument("--mode", default="hybrid", help="search mode (default hybrid)")
    args = ap.parse_args(argv)

    data = json.loads(args.data.read_text(encoding="utf-8"))[args.offset:]
    if args.pick:
        data = [data[int(i)] for i in args.pick.split(",")]
    data = data[: args.conversations]
    embedder = OfflineEmbedder()
    embedder.encode(["warm up"], role="query")
    settings: dict[str, Any] = local_settings(ap.error) if args.local else {}
    paths = ([("raw", False)] if not args.no_raw else []) + [("chat-hook", True)]
    rows: dict[str, dict[str, Any]] = {name: {"turns": 0, "stored": 0, "evidence": 0, "kept": 0, "scores": [],
                                              "reasons": Counter(), "ingest_s": 0.0, "consolidate_s": 0.0}
                                       for name, _ in paths}
    with tempfile.TemporaryDirectory(prefix="chathook-") as tmp:
        for ci, sample in enumerate(data):
            turns = [{**t, "metadata": {"turn_id": t["metadata"]["dia_id"]}} for t in turns_of(sample, now=int(time.time()))]
            questions = questions_of(sample, {t["metadata"]["turn_id"] for t in turns})
            if args.sessions:
                turns = first_sessions(turns, args.sessions)
            known = {t["metadata"]["turn_id"] for t in turns}
            questions = [q for q in questions if set(q[2]) <= known]  # every evidence turn said in the slice
            evidence_turns = {e for _, _, ev in questions for e in ev}
            user = str(sample.get("sample_id", f"conv-{ci}"))
            for name, hook in paths:
                row = rows[name]
                mem, info = run_path(str(Path(tmp) / f"{name}-{ci}.db"), turns, user, embedder, settings, hook,
                                     args.consolidate and hook, progress=True)
                try:
                    kept = stored_turns(mem, user)
                    row["turns"] += len(turns)
                    row["stored"] += len(kept & known)
                    row["evidence"] += len(evidence_turns)
                    row["kept"] += len(evidence_turns & kept)
                    row["reasons"] += info["reasons"]
                    row["ingest_s"] += info["ingest_s"]
                    row["consolidate_s"] += (info["consolidated"] or {}).get("seconds", 0.0)
                    for _cat, question, evidence in questions:
                        hits = mem.search(question, user_id=user, limit=10, mode=args.mode).all
                        row["scores"].append(rank_score(hits, evidence))
                finally:
                    mem.close()
            print(f"conversation {ci + 1}/{len(data)} {user}: {len(turns)} turns, {len(questions)} questions", file=sys.stderr)

    report = {name: summary(row) for name, row in rows.items()}
    print_table(report, len(data), args)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def local_settings(error: Any) -> dict[str, Any]:
    """The settings that point the library at the server `scripts/local_llm.py serve` recorded (an
    OpenAI-compatible llama.cpp server on loopback); `error` says what to do when there is none."""
    import local_llm  # scripts/ is on sys.path (above)

    state = local_llm.recorded_server(error)
    return {"llm_provider": "openai", "llm_base_url": state["url"], "llm_model": state["model"], "llm_timeout_s": 600.0}


def summary(row: dict[str, Any]) -> dict[str, Any]:
    scores = row["scores"]
    out = {m: statistics.fmean(s[m] for s in scores) if scores else float("nan") for m in METRICS}
    out.update({"questions": len(scores), "turns": row["turns"],
                "turns_stored": row["stored"] / row["turns"] if row["turns"] else float("nan"),
                "evidence_kept": row["kept"] / row["evidence"] if row["evidence"] else float("nan"),
                "ingest_turns_per_s": row["turns"] / row["ingest_s"] if row["ingest_s"] else 0.0,
                "consolidate_s": row["consolidate_s"], "dropped": dict(row["reasons"].most_common(8))})
    return out


def print_table(report: dict[str, Any], conversations: int, args: argparse.Namespace) -> None:
    llm = "the bundled local model" if args.local else "offline rules"
    part = f" (first {args.sessions} sessions each)" if args.sessions else ""
    print(f"\nLoCoMo through the chat hook: {conversations} conversations{part}, {llm}, search mode {args.mode}"
          + (", one consolidation per conversation" if args.consolidate else ""))
    header = f"{'path':<12}{'questions':>10}{'turns stored':>14}{'evidence kept':>15}" + "".join(f"{m:>8}" for m in METRICS) + f"{'turns/s':>9}"
    print(header)
    print("-" * len(header))
    for name, r in report.items():
        print(f"{name:<12}{r['questions']:>10}{r['turns_stored']:>14.3f}{r['evidence_kept']:>15.3f}"
              + "".join(f"{r[m]:>8.3f}" for m in METRICS) + f"{r['ingest_turns_per_s']:>9.1f}")
    for name, r in report.items():
        if name != "raw":
            print(f"{name}: why turns were not stored: " + ", ".join(f"{k} x{v}" for k, v in r["dropped"].items() if k != "stored"))
