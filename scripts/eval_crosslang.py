#!/usr/bin/env python
"""Cross-language recall: does `Memory.search` find an English memory for a Chinese question, and
a Chinese memory for an English one, among one user's other everyday memories?

The set (tests/data/crosslang_pairs.jsonl) is one user's store: every memory of a pair plus the
distractor rows, each with its chat. Each question is asked in each mode (top 10, episodic); a hit
is the pair's own memory. Modes:

- cosine: dense search with the hubness, subject and context stages off (the embedder alone);
- dense:  the search's dense mode (cosine, then hubness and the chat/who context stage);
- bm25:   BM25 alone (jieba tokens; across languages it can only match by accident);
- hybrid: the default search (weighted fusion of cosine and BM25, hubness, context).

For every question the cosine search (for hybrid: or the dense mode) finds in its top 3 and a mode
loses, that mode's stages are traced (hippocampus/retrieval/stages.py STAGES): the question's rank
after each stage, and the stage that pushed it out of the top 3, with what it put above it.
`--same-language` asks each pair's control question in the memory's own language instead: what a
change for cross-language recall must not trade away.

    python scripts/eval.py crosslang                                   # default embedder, both splits
    python scripts/eval.py crosslang --split held_out --json out.json
    python scripts/eval.py crosslang --embedder local --model-path ~/.hippocampus/models/embeddinggemma-300m
    python scripts/eval.py crosslang --embedder local --model-path ... --demo   # also the demo's questions
    python scripts/eval.py crosslang --crosslang off --demo              # e5 alone, as before the dual path
    python scripts/eval.py crosslang --split tune --modes hybrid --bench 10000 --rss   # what the default costs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: make `scripts` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hippocampus import Memory  # noqa: E402
from hippocampus.retrieval import stages as search_module  # noqa: E402
from scripts.eval_locomo import add_embedder_args, make_eval_embedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "tests" / "data" / "crosslang_pairs.jsonl"
USER = "mei"
MODES: dict[str, tuple[str, dict[str, Any]]] = {  # name -> (search mode, MemoryConfig overrides)
    "cosine": ("dense", {"rank_hubness_weight": 0.0, "rank_chat_weight": 0.0, "rank_who_weight": 0.0,
                         "rank_subject_weight": 0.0}),
    "dense": ("dense", {}),
    "bm25": ("bm25", {}),
    "hybrid": ("hybrid", {}),
}
_SHOWN = ("similarity", "hubness", "bm25_norm", "bm25_shift", "subject", "chat", "who")
REFERENCES = {"dense": ("cosine",), "hybrid": ("cosine", "dense")}  # a mode lost a question one of these found
_UNSCORED = ("gather", "hubness")  # stages that leave the score unset


def load_rows(path: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """The set's rows: pairs (a memory and its question) and distractor memories."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def store_items(rows: Sequence[dict[str, Any]], now: int) -> list[dict[str, Any]]:
    """add_many items: every memory of the set, its chat as told, one day per chat, a minute per turn."""
    chats = sorted({r["chat_id"] for r in rows})
    turn: dict[str, int] = {}
    items = []
    for r in rows:
        day = chats.index(r["chat_id"])
        n = turn[r["chat_id"]] = turn.get(r["chat_id"], -1) + 1
        ts = now - (len(chats) - day) * 86400 + 60 * n
        items.append({"text": r["memory"], "user_id": USER, "chat_id": r["chat_id"], "ts": ts, "metadata": {"case": r["id"]}})
    return items


@contextlib.contextmanager
def traced(trace: list[tuple[str, list[dict[str, Any]]]]) -> Iterator[None]:
    """Record the candidates after each stage of the searches made inside, as they stand then (a
    later stage rescores the same objects); the retriever reads STAGES at call time. Restored on exit."""
    original = search_module.STAGES

    def wrap(stage: Any) -> Any:
        def run(r: Any, q: Any, cands: list[Any]) -> list[Any]:
            out = stage(r, q, cands)
            trace.append((stage.__name__, [snapshot(c) for c in out]))
            return out
        return run

    search_module.STAGES = tuple(wrap(s) for s in original)
    try:
        yield
    finally:
        search_module.STAGES = original


def snapshot(c: Any) -> dict[str, Any]:
    """What a candidate shows after a stage: its case, chat, text and the score's parts so far."""
    parts = {k: float(v) for k, v in c.parts.items() if k in _SHOWN}
    parts.update({"similarity": float(c.similarity if c.similarity is not None else -9.0), "hubness": float(c.hub)})
    return {"case": str((c.row.get("metadata") or {}).get("case", c.id)), "chat_id": c.row.get("chat_id"),
            "text": str(c.row.get("text", ""))[:60], "score": float(c.score), "parts": parts, "dense_rank": c.dense_rank}


def stage_order(name: str, cands: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order a stage leaves: gather and hubness do not sort (their order is the cosine's, then
    the corrected cosine's); every later stage returns its candidates sorted."""
    if name == "gather":
        return sorted(cands, key=lambda c: -c["parts"]["similarity"])
    if name == "hubness":
        return sorted(cands, key=lambda c: -(c["parts"]["similarity"] + c["parts"]["hubness"]))
    return list(cands)


def explain(trace: list[tuple[str, list[dict[str, Any]]]], case: str) -> dict[str, Any]:
    """The case's rank after each stage, the first stage that moved it out of the top 3, and what
    that stage left above it (with each one's signals, the case's own last)."""
    ranks: dict[str, int | None] = {}
    culprit: dict[str, Any] | None = None
    was_in = False
    for name, cands in trace:
        order = stage_order(name, cands)
        cases = [c["case"] for c in order]
        rank = cases.index(case) + 1 if case in cases else None
        ranks[name] = rank
        inside = rank is not None and rank <= 3
        if was_in and not inside and culprit is None:
            shown = order[:3] + ([order[rank - 1]] if rank else [])
            culprit = {"stage": name, "above": [{k: c[k] for k in ("case", "chat_id", "text")} |
                                                {"score": None if name in _UNSCORED else round(c["score"], 3)} |
                                                {k: round(v, 3) for k, v in c["parts"].items()} for c in shown]}
        was_in = was_in or inside
    return {"ranks": ranks, "pushed_out_by": culprit}


def asked(row: dict[str, Any], same_language: bool = False) -> tuple[str, str]:
    """(question, direction) of a pair: its cross-language question, or with `same_language` its
    control question in the memory's own language."""
    if same_language:
        return row["question_same"], f"{row['memory_lang']}->{row['memory_lang']}"
    return row["question"], f"{row['question_lang']}->{row['memory_lang']}"


def evaluate(rows: Sequence[dict[str, Any]], embedder: Any, settings: dict[str, Any], split: str = "all",
             modes: Sequence[str] = tuple(MODES), workdir: str | None = None, same_language: bool = False) -> dict[str, Any]:
    """Store every row, ask the chosen split's questions in each mode; hit@1/hit@3 per direction and
    overall, each question's rank per mode, and a stage trace for each question a mode lost.
    `same_language`: the control questions instead (what a pipeline change must not trade away)."""
    pairs = [r for r in rows if not r.get("distractor") and split in ("all", r["split"])]
    directions = sorted({asked(r, same_language)[1] for r in pairs}, reverse=True)
    with contextlib.ExitStack() as stack:
        tmp = workdir or stack.enter_context(tempfile.TemporaryDirectory(prefix="crosslang-"))
        path = str(Path(tmp) / "crosslang.db")
        with Memory(milvus_uri=path, embedder=embedder, **settings) as mem:
            mem.add_many(store_items(rows, int(time.time())))
        ranks: dict[str, dict[str, int | None]] = {m: {} for m in modes}
        traces: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in modes}
        for mode in modes:
            search_mode, overrides = MODES[mode]
            with Memory(milvus_uri=path, embedder=embedder, **{**settings, **overrides}) as mem:
                for r in pairs:
                    trace: list[tuple[str, list[dict[str, Any]]]] = []
                    with traced(trace):
                        hits = mem.search(asked(r, same_language)[0], user_id=USER, limit=10, memory_type="episodic",
                                          mode=search_mode).episodic
                    got = [h.memory.metadata.get("case") for h in hits]
                    ranks[mode][r["id"]] = got.index(r["id"]) + 1 if r["id"] in got else None
                    traces[mode][r["id"]] = explain(trace, r["id"])
    report: dict[str, Any] = {"modes": {}, "questions": [], "lost": []}
    for mode in modes:
        table = {}
        for direction in (*directions, "overall"):
            chosen = [r for r in pairs if direction == "overall" or asked(r, same_language)[1] == direction]
            got = [ranks[mode][r["id"]] for r in chosen]
            table[direction] = {"n": len(chosen), "hit@1": sum(1 for g in got if g == 1),
                                "hit@3": sum(1 for g in got if g is not None and g <= 3)}
        report["modes"][mode] = table
    for r in pairs:
        question, direction = asked(r, same_language)
        report["questions"].append({"id": r["id"], "question": question, "split": r["split"], "direction": direction,
                                    "rank": {m: ranks[m][r["id"]] for m in modes}})
        for mode in modes:
            rank = ranks[mode][r["id"]]
            refs = {m: ranks[m][r["id"]] for m in REFERENCES.get(mode, ()) if m in ranks}
            found = {m: g for m, g in refs.items() if g is not None and g <= 3}
            if found and (rank is None or rank > 3):
                report["lost"].append({"id": r["id"], "mode": mode, "question": question, "memory": r["memory"],
                                       "found_by": found, "rank": rank, **traces[mode][r["id"]]})
    culprits: dict[str, Counter[str]] = {}
    for lost in report["lost"]:
        stage = lost["pushed_out_by"]["stage"] if lost["pushed_out_by"] else "not in the top 3 after any stage"
        culprits.setdefault(lost["mode"], Counter())[stage] += 1
    report["culprits"] = {mode: dict(c.most_common()) for mode, c in culprits.items()}
    report["meta"] = {"split": split, "same_language": same_language, "questions": len(pairs), "memories": len(rows),
                      "embedder": getattr(embedder, "model_name", "?")}
    return report


def print_report(report: dict[str, Any], out: Any = sys.stdout) -> None:
    """The hit table (counts of n), then each lost question's stage trace."""
    meta = report["meta"]
    kind = "same-language control" if meta.get("same_language") else "cross-language"
    print(f"\n{kind} recall: split {meta['split']}, {meta['questions']} questions over {meta['memories']} memories, "
          f"embedder {meta['embedder']}", file=out)
    header = f"{'mode':<8}" + "".join(f"{d + ' hit@1':>14}{d + ' hit@3':>14}" for d in next(iter(report["modes"].values())))
    print(header, file=out)
    print("-" * len(header), file=out)
    for mode, table in report["modes"].items():
        cells = "".join(f"{'%d/%d' % (t['hit@1'], t['n']):>14}{'%d/%d' % (t['hit@3'], t['n']):>14}" for t in table.values())
        print(f"{mode:<8}{cells}", file=out)
    for mode, counts in report["culprits"].items():
        print(f"{mode}: questions lost against {' or '.join(REFERENCES[mode])}, by the stage that pushed them out of "
              f"the top 3: " + ", ".join(f"{stage} {n}" for stage, n in counts.items()), file=out)
    for lost in report["lost"]:
        path = " -> ".join(f"{k} {v if v is not None else '-'}" for k, v in lost["ranks"].items())
        found = ", ".join(f"{m} rank {g}" for m, g in lost["found_by"].items())
        print(f"\n[{lost['mode']}] {lost['id']} {lost['question']}  {found}; {lost['mode']} rank "
              f"{lost['rank'] or '>10'}\n  ranks: {path}", file=out)
        culprit = lost["pushed_out_by"]
        if culprit:
            print(f"  pushed out by {culprit['stage']}; its top 3, then the question's memory:", file=out)
            for c in culprit["above"]:
                signals = ", ".join(f"{k} {v}" for k, v in c.items() if k in _SHOWN)
                score = f"score {c['score']:.3f}, " if c["score"] is not None else ""
                print(f"    {c['case']:<6} [{c['chat_id']}] {score}{signals} {c['text']!r}", file=out)


def run_demo_questions(embedder: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """`hippocampus demo` with this embedder: its conversation through the offline write rules and
    consolidation into a fresh store, then its questions (top 3), as the demo asks them."""
    from hippocampus.cli.demo import ingest, load_conversation

    conv = load_conversation()
    out: dict[str, Any] = {"questions": []}
    with tempfile.TemporaryDirectory(prefix="crosslang-demo-") as tmp:
        demo_settings = {"llm_provider": "offline", "llm_model": "offline-rules", "llm_base_url": None, **settings}
        with Memory(milvus_uri=str(Path(tmp) / "demo.db"), embedder=embedder, **demo_settings) as mem:
            ingest(mem, conv)
            mem.consolidate(user_id=conv.user_id)
            for q in conv.questions:
                hits = mem.search(q.question, user_id=conv.user_id, limit=3).all[:3]
                found = any(q.expect.lower() in h.text.lower() for h in hits)
                out["questions"].append({"question": q.question, "note": q.note, "found": found, "top3": [h.text for h in hits]})
    cross = [q for q in out["questions"] if not _same_language(q["note"])]
    out["found"] = sum(q["found"] for q in out["questions"])
    out["cross_found"], out["cross_n"] = sum(q["found"] for q in cross), len(cross)
    return out


def bench(rows: Sequence[dict[str, Any]], embedder: Any, settings: dict[str, Any], size: int) -> dict[str, Any]:
    """Ingestion rate and search latency at `size` memories, e5 alone ("before") and with the dual path
    ("dual"), side by side in one process: the set's memories repeated (each copy numbered, so no two
    texts are equal) through add_many into one store each; each store closed and opened again, its first
    search timed apart (the dual path reads the user's vectors then); then every question of the set
    asked of both in turn (hybrid, top 10, query embedding included), so that the load of a shared
    machine falls on both alike: p50 and p99 in ms."""
    items = []
    for n in range(size):
        r = rows[n % len(rows)]
        items.append({"text": f"{r['memory']} ({n // len(rows)})" if n >= len(rows) else r["memory"], "user_id": USER,
                      "chat_id": f"{r['chat_id']}-{n // len(rows)}"})
    questions = [r[k] for r in rows if not r.get("distractor") for k in ("question", "question_same")]
    variants = {"before": {**settings, "crosslang_embedder": None}, "dual": {**settings, "crosslang_embedder": "use-multilingual"}}
    out: dict[str, Any] = {"memories": size, "queries": len(questions)}
    with tempfile.TemporaryDirectory(prefix="crosslang-bench-") as tmp, contextlib.ExitStack() as stack:
        mems = {}
        for name, st in variants.items():
            path = str(Path(tmp) / f"{name}.db")
            with Memory(milvus_uri=path, embedder=embedder, **st) as mem:
                mem.search(questions[0], user_id=USER, limit=10)  # loads the models before the clock starts
                t0 = time.perf_counter()
                for start in range(0, size, 100):
                    mem.add_many(items[start:start + 100])
                out[name] = {"add_many_per_s": round(size / (time.perf_counter() - t0), 1)}
            # searched as a process that opens the store finds it (milvus-lite flushed what it held in memory)
            mem = mems[name] = stack.enter_context(Memory(milvus_uri=path, embedder=embedder, **st))
            t0 = time.perf_counter()
            mem.search(questions[0], user_id=USER, limit=10)  # the dual path reads the user's vectors here, once
            out[name]["first_search_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        times: dict[str, list[float]] = {name: [] for name in mems}
        for q in questions:
            for name, mem in mems.items():
                t = time.perf_counter()
                mem.search(q, user_id=USER, limit=10)
                times[name].append((time.perf_counter() - t) * 1000)
        for name, ts in times.items():
            out[name].update(search_p50_ms=round(float(np.percentile(ts, 50)), 1), search_p99_ms=round(float(np.percentile(ts, 99)), 1))
    return out


_RSS_CHILD = """
import sys, tempfile
from hippocampus import Memory
with Memory(milvus_uri=tempfile.mkdtemp() + "/m.db", crosslang_embedder=None if sys.argv[1] == "off" else sys.argv[1]) as m:
    m.add_many([{"text": f"I'm allergic to penicillin {i}", "user_id": "mei"} for i in range(50)]
               + [{"text": f"我女儿在学钢琴 {i}", "user_id": "mei"} for i in range(50)])
    m.search("我对哪种药过敏？", user_id="mei")
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]  # this process's own peak:
print(round(int(hwm.split()[1]) / 1024))  # ru_maxrss would carry the parent's across fork and exec
"""


def resident() -> dict[str, int]:
    """Peak resident memory (MB, Linux's VmHWM) of a fresh process that opens a store, adds 100 memories
    (half in each language) and searches once: e5 alone ("before") and the default ("dual"), each in its
    own process."""
    out = {}
    for name, setting in (("before", "off"), ("dual", "auto")):
        run = subprocess.run([sys.executable, "-c", _RSS_CHILD, setting], capture_output=True, text=True, check=True,
                             cwd=REPO)
        out[name] = int(run.stdout.strip().splitlines()[-1])
    return out


def _same_language(note: str) -> bool:
    """The demo's notes say 'English question, Chinese memory' and the like."""
    words = note.replace(",", "").split()
    return len(words) >= 4 and words[0] == words[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--split", choices=("all", "tune", "held_out"), default="all")
    ap.add_argument("--modes", default=",".join(MODES), help=f"any of {', '.join(MODES)}")
    add_embedder_args(ap)
    ap.add_argument("--same-language", action="store_true",
                    help="ask each pair's control question in the memory's own language instead")
    ap.add_argument("--demo", action="store_true", help="also ask the demo conversation's questions with this embedder")
    ap.add_argument("--bench", type=int, default=0, metavar="N",
                    help="also time add_many and search (p50/p99) at N memories (the set repeated), e5 alone and dual, side by side")
    ap.add_argument("--rss", action="store_true", help="also the peak resident memory of a small process, e5 alone and dual")
    ap.add_argument("--json", type=Path, help="write the report here")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        ap.error(f"unknown mode(s): {', '.join(unknown)}")
    embedder, settings = make_eval_embedder(args)
    started = time.perf_counter()
    splits = ("tune", "held_out") if args.split == "all" else (args.split,)
    rows = load_rows(args.data)
    reports = {split: evaluate(rows, embedder, settings, split, modes, same_language=args.same_language) for split in splits}
    for report in reports.values():
        print_report(report)
    result: dict[str, Any] = {"splits": reports}
    if args.demo:
        demo = result["demo"] = run_demo_questions(embedder, settings)
        print(f"\ndemo: {demo['found']}/{len(demo['questions'])} questions in the top 3, "
              f"cross-language {demo['cross_found']}/{demo['cross_n']}")
        for q in demo["questions"]:
            print(f"  {'found ' if q['found'] else 'MISSED'} {q['question']} ({q['note']})")
    if args.bench:
        b = result["bench"] = bench(rows, embedder, settings, args.bench)
        for name in ("before", "dual"):
            print(f"\nbench {name} at {b['memories']} memories: add_many {b[name]['add_many_per_s']}/s, first search after opening "
                  f"{b[name]['first_search_ms']} ms, then search p50 {b[name]['search_p50_ms']} ms, p99 {b[name]['search_p99_ms']} ms "
                  f"({b['queries']} queries, hybrid, query embedding included)")
    if args.rss:
        r = result["rss_mb"] = resident()
        print(f"\npeak resident memory: before {r['before']} MB, dual {r['dual']} MB (+{r['dual'] - r['before']} MB)")
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(f"\n{result['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0
