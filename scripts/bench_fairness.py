#!/usr/bin/env python
"""Tenant B's search while tenant A stores a large batch, through a real service (issue 41: "another
tenant's search during a 3,000-text batch answers within 1 s of its usual time").

    python scripts/bench_fairness.py                       # 3,000 texts, B's searches alone then during A's batch
    python scripts/bench_fairness.py --texts 300 --alone 5 --json fair.json
    python scripts/bench_fairness.py --burst                # issue 57's burst: two 250-item add_many and two single-add streams
    python scripts/bench_fairness.py --big-turns 2          # issue 57: two concurrent 60 KB Chinese turns
    python scripts/bench_fairness.py --alone-batch 500      # one tenant's add_many rate, nobody else about

- Service: `python -m hippocampus --uri <tmp>/fair.db serve` (scripts/bench_service.py `Service`: its own
  process group, temporary HIPPOCAMPUS_HOME and store, offline embedder and LLM, SIGTERM at the end) with two
  keys: tenant A may touch `alice`, tenant B `bob`. The bundled embedders (e5, and the cross-language model
  where the settings keep it) are shared by both tenants.
- B first stores `--seed` memories, then searches `--alone` times with nothing else running (its usual time).
- A then sends add_many of `--texts` chat-like texts from a thread (the Client sends requests of
  wire.MAX_ADD_MANY items); B searches one query after another until A's batch is done.
- `--burst`: instead of one batch, A sends two add_many of `--burst-size` items from two threads and, from
  two more threads, single adds one after another until both batches are done (issue 57's burst).
  `--big-turns N`: A sends N concurrent single adds of a 60 KB Chinese turn each (issue 57), repeated until
  B has searched `--alone` times during them.
- `--alone-batch N`: tenant A alone sends add_many of N texts (B only seeds and warms, then waits): A's
  texts per second when no other tenant is about, what adaptive chunks must not cost (docs/decisions.md).
- Latencies are taken in the client (perf_counter around the call: HTTP and JSON included). The bench
  process and the service share the machine's cores, as do any other processes: read the load beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.bench_service import Service  # noqa: E402

QUERIES = ["where does bob keep his bicycle?", "what does bob drink in the morning?", "when is bob's dentist appointment?",
           "鲍勃住在哪里?", "who is bob's manager?", "what instrument is bob learning?"]
SEED = ["I keep my bicycle in the garage behind the house", "I drink green tea every morning",
        "My dentist appointment is next Tuesday at 3 pm", "我住在杭州西湖边", "My manager is called Priya",
        "I am learning the piano on Saturdays"]


def _stats(latencies: list[float]) -> dict[str, float]:
    ms = np.asarray(latencies) * 1000
    return {"searches": len(ms), "p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)),
            "max_ms": float(ms.max())}


BIG_TURN = "我们今天在杭州西湖边散步，聊了很多关于工作和家庭的事情。" * 720  # 60,480 UTF-8 bytes, near the 63 KB and under the 64 KB limit of one memory


def _load_of_a(a: object, mode: str, texts: int, burst_size: int, big_turns: int) -> tuple[list[Callable[[], int]], str]:
    """Tenant A's threads (each returns how many memories it stored) for `mode`, and the load's label."""
    def batch(tag: str, n: int) -> Callable[[], int]:
        items = [{"text": f"note {tag}{i}: I bought apples at the market and talked to Sam about the {i}th order",
                  "user_id": "alice"} for i in range(n)]
        return lambda: len(a.add_many(items))

    if mode == "burst":
        return [batch("x", burst_size), batch("y", burst_size)], f"two {burst_size}-item add_many and two single-add streams"
    if mode == "big":
        return [lambda: len(a.add(BIG_TURN, "alice").ids) for _ in range(big_turns)], f"{big_turns} concurrent 60 KB Chinese turns"
    return [batch("", texts)], f"A's {texts:,}-text add_many"


def run(texts: int, alone: int, seed: int, mode: str = "batch", burst_size: int = 250, big_turns: int = 2) -> dict[str, object]:
    """B's search latencies alone and during A's batch, and A's batch figures."""
    from hippocampus import Client

    key_a, key_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)  # 16 bytes can draw a letters-only key the start-up check rates at 125 bits
    with tempfile.TemporaryDirectory(prefix="bench-fair-") as tmp:
        service = Service(Path(tmp) / "fair.db", Path(tmp) / "home",
                          {"HIPPOCAMPUS_API_KEYS": f"{key_a}=alice;{key_b}=bob", "HIPPOCAMPUS_API_KEY": "",
                           "HIPPOCAMPUS_KEYS_FILE": ""})
        try:
            with Client(service.url, api_key=key_b, timeout=3600) as b, Client(service.url, api_key=key_a, timeout=3600) as a:
                b.add_many([{"text": SEED[i % len(SEED)] + ("" if i < len(SEED) else f" (note {i})"), "user_id": "bob"}
                            for i in range(max(seed, len(SEED)))])
                b.search(QUERIES[0], "bob")  # warm: the models load once per process

                def timed_search(n: int) -> float:
                    t0 = time.perf_counter()
                    b.search(QUERIES[n % len(QUERIES)], "bob")
                    return time.perf_counter() - t0

                quiet = [timed_search(n) for n in range(alone)]
                jobs, label = _load_of_a(a, mode, texts, burst_size, big_turns)
                done = threading.Event()
                batch: dict[str, float] = {"stored": 0}
                count = threading.Lock()
                t0 = time.perf_counter()

                failed: list[BaseException] = []

                def tenant_a(job: Callable[[], int]) -> None:
                    try:
                        stored = job()
                    except BaseException as exc:  # reported after the run: a refused load measures nothing
                        failed.append(exc)
                        return
                    if mode == "big":  # repeated until B has searched `alone` times during them
                        while len(busy) < alone:
                            stored += job()
                    with count:
                        batch["stored"] += stored

                def singles() -> None:  # the burst's single adds, until the batches are done
                    n = 0
                    while not done.is_set():
                        a.add(f"note s{threading.get_ident()}-{n}: Sam called about the order", "alice")
                        n += 1
                    with count:
                        batch["stored"] += n

                busy: list[float] = []
                workers = [threading.Thread(target=tenant_a, args=(job,)) for job in jobs]
                extra = [threading.Thread(target=singles) for _ in range(2 if mode == "burst" else 0)]
                for worker in workers + extra:
                    worker.start()
                busy.append(timed_search(0))  # at least one, however short the batch
                while any(w.is_alive() for w in workers):
                    busy.append(timed_search(len(busy)))
                batch["wall_s"] = time.perf_counter() - t0
                done.set()
                for worker in workers + extra:
                    worker.join()
                if failed:
                    raise RuntimeError(f"tenant A's load failed: {failed[0]!r}")
        finally:
            service.stop()
    alone_row, busy_row = _stats(quiet), _stats(busy)
    return {"texts": texts, "label": label, "batch_wall_s": batch["wall_s"], "stored": batch.get("stored", 0),
            "texts_per_s": batch["stored"] / batch["wall_s"], "alone": alone_row, "during": busy_row,
            "p50_extra_ms": busy_row["p50_ms"] - alone_row["p50_ms"], "max_extra_ms": busy_row["max_ms"] - alone_row["p50_ms"],
            "load": os.getloadavg()}


def run_alone_batch(texts: int, seed: int) -> dict[str, object]:
    """Tenant A's add_many of `texts` texts with no other tenant about: its texts per second."""
    from hippocampus import Client

    key_a, key_b = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="bench-fair-") as tmp:
        service = Service(Path(tmp) / "fair.db", Path(tmp) / "home",
                          {"HIPPOCAMPUS_API_KEYS": f"{key_a}=alice;{key_b}=bob", "HIPPOCAMPUS_API_KEY": "",
                           "HIPPOCAMPUS_KEYS_FILE": ""})
        try:
            with Client(service.url, api_key=key_b, timeout=3600) as b, Client(service.url, api_key=key_a, timeout=3600) as a:
                b.add_many([{"text": SEED[i % len(SEED)], "user_id": "bob"} for i in range(max(seed, len(SEED)))])
                b.search(QUERIES[0], "bob")  # warm: the models load once per process
                time.sleep(2.0)  # longer than FairLock.RECENT_S: B is no longer about
                items = [{"text": f"note {i}: I bought apples at the market and talked to Sam about the {i}th order",
                          "user_id": "alice"} for i in range(texts)]
                t0 = time.perf_counter()
                stored = len(a.add_many(items))
                wall = time.perf_counter() - t0
        finally:
            service.stop()
    return {"texts": texts, "stored": stored, "wall_s": wall, "texts_per_s": stored / wall, "load": os.getloadavg()}


def table(report: dict) -> str:
    rows = ["| B's search | searches | p50 ms | p90 ms | max ms |", "|---|---|---|---|---|"]
    for label, key in (("alone", "alone"), (f"during {report['label']}", "during")):
        r = report[key]
        rows.append(f"| {label} | {r['searches']} | {r['p50_ms']:.0f} | {r['p90_ms']:.0f} | {r['max_ms']:.0f} |")
    rows.append("")
    rows.append(f"A's load: {report['stored']:,} stored in {report['batch_wall_s']:.1f} s ({report['texts_per_s']:.1f} texts/s). "
                f"During it B's p50 is {report['p50_extra_ms']:+.0f} ms and its slowest {report['max_extra_ms']:+.0f} ms from "
                f"its usual p50 (goal: within 1,000 ms). Load average at the end: "
                + " ".join(f"{x:.1f}" for x in report["load"]))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=3000, help="tenant A's add_many size (default 3000)")
    parser.add_argument("--alone", type=int, default=20, help="B's searches with nothing else running (default 20)")
    parser.add_argument("--seed", type=int, default=50, help="B's memories before it searches (default 50)")
    parser.add_argument("--burst", action="store_true", help="A's load: two add_many of --burst-size and two single-add streams")
    parser.add_argument("--burst-size", type=int, default=250, help="each add_many of the burst (default 250)")
    parser.add_argument("--big-turns", type=int, default=0, help="A's load: this many concurrent 60 KB Chinese turns")
    parser.add_argument("--alone-batch", type=int, default=0, help="only A's add_many of this many texts, nobody else about")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.alone_batch:
        alone = run_alone_batch(args.alone_batch, args.seed)
        print(f"A alone: {alone['stored']:,} stored in {alone['wall_s']:.1f} s ({alone['texts_per_s']:.1f} texts/s). "
              "Load average at the end: " + " ".join(f"{x:.1f}" for x in alone["load"]))
        if args.json:
            args.json.write_text(json.dumps(alone, indent=2), encoding="utf-8")
        return 0
    mode = "burst" if args.burst else "big" if args.big_turns else "batch"
    report = run(args.texts, args.alone, args.seed, mode, args.burst_size, args.big_turns)
    print(table(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
