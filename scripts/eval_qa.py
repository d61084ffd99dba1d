#!/usr/bin/env python
"""End-to-end QA on LoCoMo: recall memories for a question, answer it with a model through an
OpenAI-compatible endpoint, and judge the answer against the gold one. Retrieval alone (what
eval_locomo.py measures) says whether the evidence was found; this says whether an agent answers.

Ingestion is eval_locomo.py's (its helpers, imported): one milvus-lite store per conversation in a
temporary directory, one memory per turn ("speaker: text"), infer=False, the session dates shifted so
that the conversation ends now. The prompt shows each recalled turn with its session's real date.

Per question: (a) default: `Memory.search` top --k (episodic); (b) --loop: `recall_loop` with the
answering model as its planner (rounds and recall calls recorded). The answer prompt and the judge
prompt belong to this script (their names and hashes are printed). Beside the judge: token F1 (SQuAD
normalisation) so that a lenient judge shows, and whether the evidence turns were in the prompt (a
wrong answer with the evidence in the prompt is a reading miss, without it a retrieval miss), plus
eval_locomo.py's search figures (hit@5, hit@10, MRR@10) for the same questions.

    python scripts/local_llm.py serve --threads 2 --port 8080
    python scripts/eval.py qa --local --conversations 1 --per-category 5 --json qa.json
    python scripts/eval.py qa --local --conversations 1 --per-category 5 --loop
    python scripts/eval.py qa --base-url URL --model NAME --judge-base-url URL2 --judge-model NAME2
    python scripts/eval.py qa --retrieval-only --conversations 2     # no model: retrieval figures only

There is no offline answerer: without an endpoint the script refuses (except with --retrieval-only).
Categories 1-4 (5, adversarial, has no answer); questions without usable evidence are skipped, counted.
The data (CC BY-NC 4.0) is read from ../shared/bench/locomo/ and never copied into the repo.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import signal
import statistics
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make `scripts` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hippocampus import Memory  # noqa: E402
from hippocampus.agent.recall import recall_loop  # noqa: E402
from hippocampus.embeddings import OfflineEmbedder  # noqa: E402
from hippocampus.errors import ConfigError  # noqa: E402
from hippocampus.llm import LLMClient  # noqa: E402
from hippocampus.llm.client import require_key  # noqa: E402
from hippocampus.processors.base import DATA_RULE, data_block  # noqa: E402
from scripts.eval_locomo import CATEGORIES, CATEGORY_NAMES, DEFAULT_DATA, normalise_evidence, score, turns_of  # noqa: E402

ANSWER_PROMPT_NAME = "eval_qa.answer.v1"
ANSWER_SYSTEM = (
    "You answer questions about a long conversation between $a and $b, using memories of it. Each memory is one "
    "turn: [date of its session] speaker: what they said. Answer from the memories only, as briefly as possible "
    "(a name, a date, a few words; no explanation). Relative dates (\"yesterday\", \"last week\") count from the "
    "memory's date: give the date or period they mean, as precisely as the memories allow. If the memories do "
    "not contain the answer, reply exactly: unknown"
)
ANSWER_USER = "Memories:\n$memories\n\nQuestion: $question\nAnswer:"
JUDGE_PROMPT_NAME = "eval_qa.judge.v1"
JUDGE_SYSTEM = (
    "You grade an answer to a question about a conversation against the gold answer. Reply CORRECT when the "
    "generated answer states the same key fact as the gold answer: other wording, another date format, or extra "
    "detail are fine as long as the person, thing, number, date or period matches. Reply WRONG when it states a "
    "different fact, contradicts the gold answer, misses its key fact, or says unknown. Reply with one word: "
    "CORRECT or WRONG."
)
JUDGE_USER = "Question: $question\nGold answer: $gold\nGenerated answer: $answer\nVerdict:"
UNKNOWN = "unknown"
TABLE_COLUMNS = ("n", "judge acc", "token F1", "ev in prompt", "all ev in prompt", "hit@5", "hit@10", "mrr@10", "failed", "answer s")


def prompt_hash(*parts: str) -> str:
    """A short fingerprint of a prompt's text, printed so a run names exactly what it asked."""
    return hashlib.sha256("\n\x00\n".join(parts).encode("utf-8")).hexdigest()[:12]


def fill(template: str, **values: str) -> str:
    return string.Template(template).substitute(values)


# ------------------------------------------------------------------ pure scoring
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalise_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in str(text).lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 on normalised words (both empty: 1.0, one empty: 0.0)."""
    pred, ref = normalise_answer(prediction).split(), normalise_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


_VERDICT = re.compile(r"\b(correct|wrong|incorrect)\b", re.I)


def parse_verdict(reply: str) -> bool | None:
    """The judge's first CORRECT / WRONG (INCORRECT counts as WRONG); None when it said neither."""
    m = _VERDICT.search(reply or "")
    return None if m is None else m.group(1).lower() == "correct"


def is_unknown(answer: str) -> bool:
    return normalise_answer(answer) in (UNKNOWN, "i dont know", "not mentioned")


# ------------------------------------------------------------------ questions
def select_questions(samples: Sequence[dict[str, Any]], categories: Sequence[str] = CATEGORIES, per_category: int | None = None,
                     questions: int | None = None, seed: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The deterministic subset: (questions in file order, how many were skipped for lack of usable
    evidence). `per_category` samples that many per category, `questions` that many in all (seeded);
    neither: every question of `categories`."""
    pool: list[dict[str, Any]] = []
    skipped = 0
    for ci, sample in enumerate(samples):
        known = {t["metadata"]["dia_id"] for t in turns_of(sample)}
        for qi, qa in enumerate(sample["qa"]):
            cat = str(qa.get("category"))
            if cat not in categories or "answer" not in qa:
                continue
            evidence = normalise_evidence(qa.get("evidence"), known)
            if not evidence:
                skipped += 1
                continue
            pool.append({"conv": ci, "qa": qi, "user": str(sample.get("sample_id", f"conv-{ci}")), "category": cat,
                         "question": str(qa["question"]), "gold": str(qa["answer"]), "evidence": evidence})
    rng = random.Random(seed)
    if per_category is not None:
        chosen = []
        for cat in categories:
            group = [q for q in pool if q["category"] == cat]
            chosen += rng.sample(group, min(per_category, len(group)))
        pool = chosen
    if questions is not None:
        pool = rng.sample(pool, min(questions, len(pool)))
    return sorted(pool, key=lambda q: (q["conv"], q["qa"])), skipped


def session_dates(sample: dict[str, Any]) -> dict[str, str]:
    """session_N -> its date as LoCoMo writes it ("1:56 pm on 8 May, 2023")."""
    conv = sample["conversation"]
    return {k[: -len("_date_time")]: str(v) for k, v in conv.items() if re.fullmatch(r"session_\d+_date_time", k)}


def answer_messages(question: str, turns: Sequence[dict[str, Any]], speakers: tuple[str, str]) -> tuple[str, str]:
    """(system, user) of the answer prompt: the memories in conversation order, each with its session date."""
    lines = [f"[{t['date']}] {' '.join(t['text'].split())}" for t in sorted(turns, key=lambda t: t["order"])]
    system = f"{fill(ANSWER_SYSTEM, a=speakers[0], b=speakers[1])}\n\n{DATA_RULE}"
    return system, fill(ANSWER_USER, memories=data_block("\n".join(lines) or "(no memories)"), question=question)


def judge_messages(question: str, gold: str, answer: str) -> tuple[str, str]:
    return JUDGE_SYSTEM, fill(JUDGE_USER, question=question, gold=gold, answer=" ".join(answer.split()))


# ------------------------------------------------------------------ summary
def summarise(rows: Sequence[dict[str, Any]], answered: bool = True) -> dict[str, dict[str, float]]:
    """Per category and 'total': judge accuracy (a failed or unjudged question counts as wrong),
    token F1 (failed: 0), evidence in the prompt, the search figures, failures, answer seconds."""
    out: dict[str, dict[str, float]] = {}
    groups = [(c, [r for r in rows if r["category"] == c]) for c in CATEGORIES] + [("total", list(rows))]
    for name, group in groups:
        if not group:
            continue
        mean = lambda key: statistics.fmean(float(r.get(key) or 0.0) for r in group)  # noqa: E731
        row = {"n": len(group), "ev in prompt": mean("evidence_in_prompt"), "all ev in prompt": mean("all_evidence_in_prompt"),
               "hit@5": mean("hit@5"), "hit@10": mean("hit@10"), "mrr@10": mean("mrr@10")}
        if answered:
            seconds = [r["answer_s"] for r in group if r.get("answer_s") is not None]
            row.update({"judge acc": statistics.fmean(float(r.get("correct") is True) for r in group), "token F1": mean("f1"),
                        "failed": sum(bool(r.get("error")) for r in group),
                        "answer s": statistics.fmean(seconds) if seconds else float("nan")})
        out[name] = row
    return out


def loop_figures(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """--loop: average rounds, recall (search) calls and planner calls per question (= per agent turn)."""
    looped = [r for r in rows if "rounds" in r]
    if not looped:
        return {}
    avg = lambda key: statistics.fmean(r[key] for r in looped)  # noqa: E731
    return {"questions": len(looped), "avg_rounds": avg("rounds"), "avg_recall_calls": avg("recall_calls"),
            "avg_planner_calls": avg("planner_calls"), "avg_memories_in_prompt": avg("memories_in_prompt"),
            "answerable_said": sum(bool(r["answerable"]) for r in looped), "with_warnings": sum(bool(r["warnings"]) for r in looped)}


def format_table(summary: dict[str, dict[str, float]]) -> str:
    cols = [c for c in TABLE_COLUMNS if any(c in row for row in summary.values())]
    head = f"{'category':<16}" + "".join(f"{c:>{max(9, len(c) + 2)}}" for c in cols)
    lines = [head, "-" * len(head)]
    for name, row in summary.items():
        label = "total" if name == "total" else f"{name} {CATEGORY_NAMES[name]}"
        cells = []
        for c in cols:
            v, w = row[c], max(9, len(c) + 2)
            cells.append(f"{int(v):>{w}d}" if c in ("n", "failed") else f"{v:>{w}.3f}" if c != "answer s" else f"{v:>{w}.1f}")
        lines.append(f"{label:<16}" + "".join(cells))
    return "\n".join(lines)


# ------------------------------------------------------------------ endpoints
def endpoint(args: argparse.Namespace, p: argparse.ArgumentParser) -> dict[str, Any] | None:
    """The answering endpoint (flags, or --local: scripts/local_llm.py's recorded server); None only
    with --retrieval-only. There is no offline answerer, so anything else without one is refused."""
    if args.local:
        if args.base_url:
            p.error("--local reads the server from scripts/local_llm.py's state; leave out --base-url")
        from scripts import local_llm

        state = local_llm.recorded_server(p.error)
        gguf = Path(str(state.get("model_path", ""))).name or "?"
        kind = f"llama-cpp-python server from scripts/local_llm.py (loopback; GGUF {gguf}; threads {state.get('threads')})"
        return {"base_url": state["url"], "model": args.model or state["model"], "kind": kind}
    if args.base_url:
        if not args.model:
            p.error("--base-url needs --model")
        from scripts.local_llm import is_loopback

        return {"base_url": args.base_url, "model": args.model,
                "kind": f"OpenAI-compatible endpoint ({'loopback' if is_loopback(args.base_url) else 'remote'})"}
    if args.retrieval_only:
        if args.loop:
            p.error("--loop asks the answering model to plan its recall: give an endpoint (--base-url/--model or --local)")
        return None
    p.error("eval_qa.py answers with a model and there is no offline answerer: give --base-url URL --model NAME, "
            "or --local (the server `python scripts/local_llm.py serve` started); --retrieval-only measures retrieval alone")
    return None  # pragma: no cover - p.error exits


def make_client(base_url: str, model: str, api_key: str, timeout_s: float, what: str) -> LLMClient:
    try:
        key = require_key(base_url, api_key, "llm")
    except ConfigError as exc:
        raise SystemExit(f"eval_qa.py: the {what} endpoint: {exc}") from exc
    return LLMClient(model, base_url, api_key=key, timeout_s=timeout_s, max_retries=2)


# ------------------------------------------------------------------ one question
def run_question(q: dict[str, Any], mem: Memory, by_id: dict[int, dict[str, Any]], args: argparse.Namespace,
                 answerer: LLMClient | None, judge: LLMClient | None, speakers: tuple[str, str]) -> dict[str, Any]:
    """One question end to end; a failure of the model or the store is the row's `error`, not a crash."""
    row: dict[str, Any] = {k: q[k] for k in ("user", "category", "question", "gold", "evidence")}
    try:
        hits = mem.search(q["question"], user_id=q["user"], limit=max(10, args.k), memory_type="episodic").episodic
        row.update(score([h.memory.metadata.get("dia_id") for h in hits], q["evidence"]))
        if args.loop and answerer is not None:
            result = recall_loop(mem, [{"role": "user", "content": q["question"]}], q["user"], max_rounds=args.max_rounds, llm=answerer)
            ids = list(result.memory_ids)
            row.update(rounds=len(result.rounds), recall_calls=sum(bool(r.query) for r in result.rounds), planner_calls=result.llm_calls,
                       answerable=result.answerable, warnings=result.warnings, needs=[r.need for r in result.rounds if r.need])
        else:
            ids = [h.memory.id for h in hits[: args.k]]
        shown = [by_id[i] for i in ids if i in by_id]
        in_prompt = {t["dia_id"] for t in shown}
        row.update(prompt_dia_ids=[t["dia_id"] for t in shown], memories_in_prompt=len(shown),
                   evidence_in_prompt=float(bool(in_prompt & set(q["evidence"]))),
                   all_evidence_in_prompt=float(set(q["evidence"]) <= in_prompt))
        if answerer is None:
            return row
        system, user = answer_messages(q["question"], shown, speakers)
        start = time.perf_counter()
        answer = answerer.chat(system, user).strip()
        row.update(answer=answer, answer_s=time.perf_counter() - start, f1=token_f1(answer, q["gold"]))
        if is_unknown(answer):  # every question of categories 1-4 has an answer: "unknown" is wrong without asking
            row.update(correct=False, judged_by="rule: the answer is unknown")
            return row
        system, user = judge_messages(q["question"], q["gold"], answer)
        try:
            verdict_text = judge.chat(system, user) if judge is not None else ""
        except Exception as exc:
            row.update(correct=None, judged_by="judge failed", judge_error=f"{type(exc).__name__}: {exc}")
            return row
        row.update(judge_reply=verdict_text.strip()[:200], correct=parse_verdict(verdict_text),
                   judged_by="judge" if parse_verdict(verdict_text) is not None else "judge said neither CORRECT nor WRONG")
    except Exception as exc:  # noqa: BLE001 - one question's failure is reported, the run goes on
        row.update(error=f"{type(exc).__name__}: {exc}", f1=row.get("f1", 0.0))
    return row


def progress(i: int, n: int, row: dict[str, Any]) -> str:
    head = f"[{i}/{n}] {row['user']} cat {row['category']} ev-in-prompt {int(row.get('evidence_in_prompt', 0))}"
    if "answer" not in row and not row.get("error"):  # retrieval only
        return f"{head} hit@10 {int(row.get('hit@10', 0))}"
    verdict = {True: "CORRECT", False: "WRONG", None: "unjudged"}[row.get("correct")]
    if row.get("error"):
        verdict = f"FAILED {row['error'][:120]}"
    ans = row.get("answer", "-")
    loop = f" rounds {row['rounds']} recalls {row['recall_calls']}" if "rounds" in row else ""
    return (f"{head}{loop} answer {ans[:60]!r} gold {row['gold'][:40]!r} -> {verdict} f1 {row.get('f1', 0):.2f} ({row.get('answer_s', 0):.1f} s)")


# ------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--json", type=Path, help="write the summary and every per-question row here")
    p.add_argument("--conversations", type=int, default=None, help="only the first N conversations (after --offset)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N conversations")
    p.add_argument("--categories", default=",".join(CATEGORIES), help="LoCoMo categories to ask (1-4; 5 has no answer)")
    p.add_argument("--per-category", type=int, help="N questions per category (seeded sample)")
    p.add_argument("--questions", type=int, help="N questions in all (seeded sample)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--k", type=int, default=10, help="memories in the prompt without --loop (search top k)")
    p.add_argument("--mode", choices=("hybrid", "dense", "bm25"), default="hybrid", help="search mode")
    p.add_argument("--loop", action="store_true", help="recall with recall_loop, the answering model as planner")
    p.add_argument("--max-rounds", type=int, default=3)
    p.add_argument("--base-url", help="the answering model's OpenAI-compatible endpoint")
    p.add_argument("--model", help="the answering model's name (with --local: overrides the recorded one)")
    p.add_argument("--api-key", default=os.environ.get("HIPPOCAMPUS_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY", ""))
    p.add_argument("--local", action="store_true", help="the server `scripts/local_llm.py serve` recorded")
    p.add_argument("--judge-base-url", help="the judge's endpoint (default: the answering one)")
    p.add_argument("--judge-model", help="the judge model (default: the answering one)")
    p.add_argument("--judge-api-key", default=None, help="default: --api-key")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per model request")
    p.add_argument("--retrieval-only", action="store_true", help="no model: the retrieval figures of the same questions")
    args = p.parse_args(argv)
    categories = [c for c in args.categories.split(",") if c]
    if not set(categories) <= set(CATEGORIES):
        p.error(f"--categories takes some of {','.join(CATEGORIES)}")
    if args.judge_base_url and not args.judge_model:
        p.error("--judge-base-url needs --judge-model")
    conn = endpoint(args, p)
    if not args.data.exists():
        p.error(f"no LoCoMo data at {args.data} (see ../shared/bench/locomo/SOURCE.md)")

    answerer = judge = None
    if conn is not None:
        answerer = make_client(conn["base_url"], conn["model"], args.api_key, args.timeout, "answering")
        judge_url, judge_model = args.judge_base_url or conn["base_url"], args.judge_model or conn["model"]
        judge_key = args.judge_api_key if args.judge_api_key is not None else args.api_key
        judge = make_client(judge_url, judge_model, judge_key, args.timeout, "judge")
        conn.update(judge_base_url=judge_url, judge_model=judge_model)

    samples = json.loads(args.data.read_text(encoding="utf-8"))[args.offset :][: args.conversations]
    chosen, skipped = select_questions(samples, categories, args.per_category, args.questions, args.seed)
    subset = (f"LoCoMo conversations {args.offset + 1}-{args.offset + len(samples)}, categories {','.join(categories)}, "
              + (f"{args.per_category} per category" if args.per_category is not None else "all questions")
              + (f", {args.questions} in all" if args.questions is not None else "") + f", seed {args.seed}")
    embedder = OfflineEmbedder()
    previous = signal.signal(signal.SIGTERM, _stop)  # a long run stopped with kill still reports what it measured
    rows: list[dict[str, Any]] = []
    interrupted = False
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="eval-qa-") as tmp:
        for ci, sample in enumerate(samples):
            mine = [q for q in chosen if q["conv"] == ci]
            if not mine or interrupted:
                continue
            dates = session_dates(sample)
            turns = turns_of(sample, now=int(time.time()))
            user = mine[0]["user"]
            mem = Memory(milvus_uri=str(Path(tmp) / f"c{ci}.db"), embedder=embedder, search_mode=args.mode)
            ids = mem.add_many([{**t, "user_id": user} for t in turns])
            by_id = {i: {"dia_id": t["metadata"]["dia_id"], "text": t["text"], "date": dates[t["chat_id"]], "order": n}
                     for n, (i, t) in enumerate(zip(ids, turns))}
            conv = sample["conversation"]
            speakers = (str(conv.get("speaker_a", "A")), str(conv.get("speaker_b", "B")))
            try:
                for q in mine:
                    rows.append(run_question(q, mem, by_id, args, answerer, judge, speakers))
                    print(progress(len(rows), len(chosen), rows[-1]), file=sys.stderr, flush=True)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                mem.close()
    signal.signal(signal.SIGTERM, previous)

    summary = summarise(rows, answered=conn is not None)
    meta: dict[str, Any] = {
        "subset": subset, "questions": len(rows), "selected": len(chosen), "skipped_no_evidence": skipped,
        "interrupted": interrupted, "retrieval": f"recall_loop (max_rounds {args.max_rounds}, up to 5 memories a round)"
        if args.loop else f"Memory.search top {args.k} ({args.mode}, episodic)", "search_mode": args.mode,
        "wall_s": round(time.time() - started, 1)}
    if conn is not None:
        meta.update(model=conn["model"], endpoint=conn["base_url"], endpoint_kind=conn["kind"], judge_model=conn["judge_model"],
                    judge_endpoint=conn["judge_base_url"],
                    answer_prompt=f"{ANSWER_PROMPT_NAME} sha256:{prompt_hash(ANSWER_SYSTEM, ANSWER_USER)}",
                    judge_prompt=f"{JUDGE_PROMPT_NAME} sha256:{prompt_hash(JUDGE_SYSTEM, JUDGE_USER)}",
                    judged_by=dict(Counter(r.get("judged_by", "not judged (failed)") for r in rows)))
    loop = loop_figures(rows)
    if loop:
        meta["loop"] = loop
    print_report(summary, meta)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}")
    return 130 if interrupted else 0


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def print_report(summary: dict[str, dict[str, float]], meta: dict[str, Any]) -> None:
    print(f"\nLoCoMo QA: {meta['subset']}; {meta['questions']} questions ({meta['skipped_no_evidence']} skipped: no usable evidence)"
          + ("; INTERRUPTED, partial" if meta["interrupted"] else ""))
    if "model" in meta:
        print(f"model: {meta['model']} at {meta['endpoint']} [{meta['endpoint_kind']}]")
        print(f"judge: {meta['judge_model']} at {meta['judge_endpoint']}; judge prompt {meta['judge_prompt']}; "
              f"answer prompt {meta['answer_prompt']}")
        print(f"verdicts: {', '.join(f'{k} {v}' for k, v in meta['judged_by'].items())}")
    else:
        print("retrieval only (no model asked)")
    print(f"retrieval into the prompt: {meta['retrieval']}; hit@5/hit@10/mrr@10: eval_locomo.py's search figures (top 10)")
    print(format_table(summary))
    if meta.get("loop"):
        lp = meta["loop"]
        print(f"loop: {lp['avg_rounds']:.2f} rounds, {lp['avg_recall_calls']:.2f} recall calls, {lp['avg_planner_calls']:.2f} planner "
              f"calls and {lp['avg_memories_in_prompt']:.1f} memories in the prompt per turn; the planner said it can answer "
              f"{lp['answerable_said']}/{lp['questions']}; {lp['with_warnings']} turns with a warning")
    print(f"wall {meta['wall_s']:.0f} s")
