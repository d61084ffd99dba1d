#!/usr/bin/env python
"""The service under a chat-hook load: REST (`hippocampus serve`) against the same mix in-process.

    python scripts/bench_service.py --json service.json                # clients 1,8,32; ~2.5-3.5 min here
    python scripts/bench_service.py --clients 1,8 --turns 120 --prewarm 200
    python scripts/bench_service.py --service-env OMP_WAIT_POLICY=PASSIVE   # environment for the service only

The mix is what a chat hook does per turn: one `search` of the user's question (default settings:
hybrid, k_episodic/k_semantic 5) and one `add` of the new turn with infer=False. Sentences are short,
English and Chinese (about 40% Chinese), spread over `--users` users; each client is one chat.

- Service: `python -m hippocampus --uri <tmp>/service.db serve --port <free> --no-mcp` in its own
  process group, with its own temporary HIPPOCAMPUS_HOME and store; stopped with SIGTERM at the end
  (in a finally). Every client is a thread with its own `hippocampus.Client`.
- In-process: one `Memory` on another temporary store, shared by N threads (the same client counts).
- Both are up at once and get `--prewarm` memories first (add_many, untimed) and a short untimed
  warm-up. Then, per client count, the same seeded schedule of `--turns` turns in all (split over the
  clients) runs on both, in `--rounds` chunks: service and in-process alternate chunk by chunk (and
  swap who goes first), so a change in the machine's load (the cores are shared) hits both sides.
  Each store keeps growing from one client count to the next, in the same order on both sides.
- Latencies are taken in the client thread (perf_counter around the call), so the service figures
  include HTTP, JSON and pydantic on both ends. turns/s = turns done / wall time of the run.
- errors: calls that raised. lost: acknowledged add ids that are neither in the user's get_all nor
  readable with get after the run (must be 0); for the service also after SIGTERM, by reopening its
  store in-process ("lost after restart").

Both sides run the offline embedder and offline LLM (forced) and otherwise read the same settings
(environment, ./hippocampus.yaml). The bench process and the service share the machine's cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

OFFLINE = {"embedding_provider": "offline", "llm_provider": "offline"}
START_GUARD_S = 180  # turns a hang into a failure

# Short chat turns and the questions a user would ask about them, in English and Chinese.
SLOTS_EN = {
    "city": ["Lisbon", "Tokyo", "Berlin", "Hangzhou", "Chicago", "Nairobi", "Lyon", "Osaka"],
    "day": ["Monday", "next Tuesday", "Friday", "the weekend", "March 3rd", "tomorrow"],
    "rel": ["sister", "brother", "mother", "son", "daughter", "husband", "wife", "manager"],
    "food": ["peanuts", "shrimp", "gluten", "milk", "eggs", "sesame"],
    "meet": ["budget review", "design sync", "dentist appointment", "team lunch", "1:1 with Sam"],
    "hour": ["9 am", "noon", "3 pm", "half past four", "8 pm"],
    "skill": ["piano", "Spanish", "rock climbing", "Rust", "watercolour painting", "salsa"],
    "drink": ["green tea", "black coffee", "oat latte", "hot chocolate"],
    "proj": ["billing", "search", "mobile app", "payments", "onboarding"],
}
SLOTS_ZH = {
    "city": ["杭州", "北京", "上海", "成都", "东京", "深圳", "西安", "广州"],
    "day": ["下周一", "周五", "这个周末", "明天", "三月三号", "下周二"],
    "rel": ["姐姐", "哥哥", "妈妈", "儿子", "女儿", "老公", "老婆", "经理"],
    "food": ["花生", "虾", "麸质", "牛奶", "鸡蛋", "芝麻"],
    "meet": ["预算评审", "设计同步会", "牙医预约", "团队午餐", "和小王的一对一"],
    "hour": ["上午九点", "中午", "下午三点", "四点半", "晚上八点"],
    "skill": ["钢琴", "西班牙语", "攀岩", "Rust", "水彩画", "萨尔萨舞"],
    "drink": ["绿茶", "黑咖啡", "燕麦拿铁", "热巧克力"],
    "proj": ["计费", "搜索", "移动端", "支付", "新手引导"],
}
TOPICS_EN = [  # (turn, question)
    ("I'm flying to {city} on {day} for a conference.", "When am I going to {city}?"),
    ("My {rel} is allergic to {food}, keep that in mind.", "What is my {rel} allergic to?"),
    ("We moved the {meet} to {day} at {hour}.", "When is the {meet} now?"),
    ("I started learning {skill} last month and I love it.", "What hobby did I pick up recently?"),
    ("My {rel}'s birthday is on {day}, I need a present.", "When is my {rel}'s birthday?"),
    ("I usually drink {drink} in the morning.", "What do I like to drink in the morning?"),
    ("Our team ships the {proj} release on {day}.", "When does the {proj} release go out?"),
    ("Remind me to call my {rel} about {city} at {hour}.", "What did I want to tell my {rel}?"),
]
TOPICS_ZH = [
    ("我{day}要去{city}开会。", "我什么时候去{city}？"),
    ("我{rel}对{food}过敏，记一下。", "我{rel}对什么过敏？"),
    ("{meet}改到{day}{hour}了。", "{meet}现在是什么时候？"),
    ("我上个月开始学{skill}，挺喜欢的。", "我最近在学什么？"),
    ("我{rel}的生日是{day}，得准备礼物。", "我{rel}生日是哪天？"),
    ("我早上一般喝{drink}。", "我早上喜欢喝什么？"),
    ("我们团队{day}发布{proj}新版本。", "{proj}新版本什么时候发布？"),
    ("提醒我{hour}给{rel}打电话说{city}的事。", "我要跟{rel}说什么事？"),
]


def turn_texts(rng: np.random.Generator) -> tuple[str, str]:
    """One (turn, question) pair: about 40% Chinese, slots filled at random (the question is about
    the same topic as the turn, not always about the same slot values)."""
    zh = rng.random() < 0.4
    topics, slots = (TOPICS_ZH, SLOTS_ZH) if zh else (TOPICS_EN, SLOTS_EN)
    turn, question = topics[rng.integers(len(topics))]
    fill = {k: v[rng.integers(len(v))] for k, v in slots.items()}
    ask = {k: v[rng.integers(len(v))] if rng.random() < 0.3 else fill[k] for k, v in slots.items()}
    return turn.format(**fill), question.format(**ask)


def schedule(n: int, users: int, seed: int) -> list[dict[str, str]]:
    """`n` turns: user, question to search, turn to add."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        text, query = turn_texts(rng)
        out.append({"user": f"user-{rng.integers(users)}", "query": query, "text": text})
    return out


def prewarm_items(n: int, users: int, seed: int) -> list[dict[str, Any]]:
    """`n` earlier turns over the last 30 days, for add_many (so search has something to find)."""
    rng = np.random.default_rng(seed + 7919)
    now = time.time()
    items = []
    for i in range(n):
        text, _ = turn_texts(rng)
        user = f"user-{rng.integers(users)}"
        items.append({"text": text, "user_id": user, "chat_id": f"history-{i % 5}",
                      "ts": now - 30 * 86400 + i * (30 * 86400 / max(1, n))})
    return items


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q)) if values else float("nan")


def split(turns: list[Any], parts: int) -> list[list[Any]]:
    return [turns[i::parts] for i in range(parts)]


@dataclass
class Side:
    """One way of serving the mix: a handle per client thread, and a reader for the loss check."""

    mode: str
    open_handle: Callable[[], Any]
    close_handle: Callable[[Any], None]
    reader: Any
    search: list[float] = field(default_factory=list)
    add: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acked: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    turns: int = 0
    seconds: float = 0.0

    def reset(self) -> None:
        self.search, self.add, self.errors, self.acked, self.turns, self.seconds = [], [], [], defaultdict(set), 0, 0.0

    def row(self, clients: int) -> dict[str, Any]:
        return {
            "mode": self.mode, "clients": clients, "turns": self.turns, "seconds": self.seconds,
            "turns_per_s": self.turns / self.seconds if self.seconds > 0 else float("nan"),
            "search_p50_ms": pct(self.search, 50), "search_p99_ms": pct(self.search, 99),
            "add_p50_ms": pct(self.add, 50), "add_p99_ms": pct(self.add, 99),
            "errors": len(self.errors), "error_samples": self.errors[:5],
            "lost": count_lost(self.reader, self.acked),
        }


def run_mix(side: Side, clients: int, turns: list[dict[str, str]]) -> None:
    """`clients` threads, each its own handle and chat, run their share of `turns` at once; the
    latencies, errors, acknowledged ids and wall time go into `side`."""
    shares = split(turns, clients)
    barrier = threading.Barrier(clients + 1)
    lock = threading.Lock()

    def client(c: int) -> None:
        handle = side.open_handle()
        chat = f"{side.mode}-{clients}c-chat{c}"
        search: list[float] = []
        add: list[float] = []
        ids: list[tuple[str, list[int]]] = []
        errs: list[str] = []
        try:
            barrier.wait()
            for turn in shares[c]:
                t0 = time.perf_counter()
                try:
                    handle.search(turn["query"], user_id=turn["user"])
                    search.append(time.perf_counter() - t0)
                except Exception as exc:  # noqa: BLE001 - a benchmark counts failures, it does not stop
                    errs.append(f"search: {type(exc).__name__}: {exc}")
                t0 = time.perf_counter()
                try:
                    result = handle.add(turn["text"], user_id=turn["user"], chat_id=chat, infer=False)
                    add.append(time.perf_counter() - t0)
                    ids.append((turn["user"], list(result.ids)))
                except Exception as exc:  # noqa: BLE001
                    errs.append(f"add: {type(exc).__name__}: {exc}")
        finally:
            side.close_handle(handle)
            with lock:
                side.search += search
                side.add += add
                for user, got in ids:
                    side.acked[user].update(got)
                side.errors += errs
                side.turns += len(shares[c])

    threads = [threading.Thread(target=client, args=(c,), name=f"{side.mode}-client-{c}") for c in range(clients)]
    for t in threads:
        t.start()
    barrier.wait(timeout=START_GUARD_S)  # every client has its handle (and its connection) ready
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    side.seconds += time.perf_counter() - t0


def count_lost(reader: Any, acked: dict[str, set[int]]) -> int:
    """Acknowledged ids neither in the user's get_all nor readable with get."""
    from hippocampus import NotFound

    lost = 0
    for user, ids in acked.items():
        present = {r.id for r in reader.get_all(user)}
        for memory_id in ids - present:
            try:
                reader.get(memory_id, user_id=user)
            except NotFound:
                lost += 1
    return lost


def warm_up(handle: Any, users: int) -> None:
    """Untimed: first query and passage embeddings, first store calls (a user of its own)."""
    for i in range(3):
        handle.search(f"warm-up question {i}", user_id="warm-up")
        handle.add(f"warm-up turn {i}", user_id="warm-up", chat_id="warm-up", infer=False)
    handle.search("我什么时候去杭州？", user_id=f"user-{users - 1}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """`python -m hippocampus --uri DB serve` on a free loopback port, in its own process group."""

    def __init__(self, db: Path, home: Path, extra_env: dict[str, str] | None = None):
        import httpx

        import hippocampus

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / "bench-serve.log"
        home.mkdir(parents=True, exist_ok=True)
        root = str(Path(hippocampus.__file__).resolve().parent.parent)  # the same code as in-process
        env = {**os.environ, "HIPPOCAMPUS_HOME": str(home), "PYTHONPATH": os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        env.update({f"HIPPOCAMPUS_{k.upper()}": v for k, v in OFFLINE.items()})
        env.pop("HIPPOCAMPUS_SERVER", None)
        env.update(extra_env or {})
        command = [sys.executable, "-m", "hippocampus", "--uri", str(db), "serve", "--port", str(self.port),
                   "--no-mcp", "--log-level", "warning"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, start_new_session=True)
        t0 = time.monotonic()
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() - t0 > START_GUARD_S:
                self.stop()
                raise RuntimeError(f"service did not start:\n{self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        self.start_s = time.monotonic() - t0

    def stop(self) -> int | None:
        """SIGTERM to the process group (requests in flight finish, the store closes); SIGKILL after 60 s.
        uvicorn re-raises the signal after its graceful shutdown, so a clean stop exits with -15."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=60)
                return None
        return self.proc.returncode


def _connected(client: Any) -> Any:
    client.healthy()  # opens the keep-alive connection before the clock starts
    return client


def run(tmp: Path, counts: list[int], plans: dict[int, list[dict[str, str]]], prewarm: list[dict[str, Any]],
        users: int, rounds: int, service_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Both sides live at once; per client count the turns run in `rounds` chunks, service and
    in-process alternating (and swapping who goes first), so a change in the machine's load hits both."""
    from hippocampus import Client, Memory

    out: dict[str, Any] = {"rows": []}
    db = tmp / "service.db"
    all_acked: dict[str, set[int]] = defaultdict(set)
    service = Service(db, tmp / "service-home", service_env)
    out["service_start_s"] = service.start_s
    try:
        with Client(service.url) as admin, Memory(milvus_uri=str(tmp / "inprocess.db"), **OFFLINE) as memory:
            sides = [Side("service", lambda: _connected(Client(service.url)), lambda c: c.close(), admin),
                     Side("in-process", lambda: memory, lambda m: None, memory)]
            for side in sides:
                for start in range(0, len(prewarm), 500):  # requests of a sane size
                    side.reader.add_many(prewarm[start : start + 500])
                warm_up(side.reader, users)
            for clients in counts:
                for side in sides:
                    side.reset()
                for r, chunk in enumerate(split(plans[clients], min(rounds, len(plans[clients])) or 1)):
                    for side in sides if r % 2 == 0 else sides[::-1]:
                        run_mix(side, clients, chunk)
                for side in sides:
                    row = side.row(clients)
                    out["rows"].append(row)
                    print(f"{side.mode}, {clients} clients: {row['turns_per_s']:.1f} turns/s", file=sys.stderr)
                for user, ids in sides[0].acked.items():
                    all_acked[user] |= ids
    finally:
        out["service_exit_code"] = service.stop()
    with Memory(milvus_uri=str(db), **OFFLINE) as reopened:  # what SIGTERM left on disk
        out["service_lost_after_restart"] = count_lost(reopened, all_acked)
        out["service_acked"] = sum(len(ids) for ids in all_acked.values())
    return out


def goals(rows: list[dict[str, Any]], lost_after_restart: int) -> dict[str, Any]:
    svc = {r["clients"]: r for r in rows if r["mode"] == "service"}
    loc = {r["clients"]: r for r in rows if r["mode"] == "in-process"}
    ratio = svc[1]["search_p50_ms"] / loc[1]["search_p50_ms"] if 1 in svc and 1 in loc else float("nan")
    errors = sum(r["errors"] for r in rows)
    lost = sum(r["lost"] for r in rows) + lost_after_restart
    grows = svc[8]["turns_per_s"] > svc[1]["turns_per_s"] if 1 in svc and 8 in svc else None
    return {
        "search_p50_ratio_1_client": ratio,
        "ratio_within_1_5x": bool(ratio <= 1.5) if ratio == ratio else None,
        "throughput_grows_1_to_8": grows,
        "errors": errors, "lost": lost, "no_errors_no_loss": errors == 0 and lost == 0,
    }


def print_table(report: dict[str, Any]) -> None:
    cols = [("mode", "mode", "{}"), ("clients", "clients", "{}"), ("turns", "turns", "{}"),
            ("turns/s", "turns_per_s", "{:.1f}"), ("search p50", "search_p50_ms", "{:.1f}"),
            ("search p99", "search_p99_ms", "{:.1f}"), ("add p50", "add_p50_ms", "{:.1f}"),
            ("add p99", "add_p99_ms", "{:.1f}"), ("errors", "errors", "{}"), ("lost", "lost", "{}")]
    rows = sorted(report["rows"], key=lambda r: (r["mode"] != "service", r["clients"]))
    print("| " + " | ".join(c[0] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(fmt.format(r.get(key, float("nan"))) for _, key, fmt in cols) + " |")
    g = report["goals"]
    print(f"latencies in ms, taken by the caller; one turn = search + add (infer=False); {report['prewarm']} memories "
          f"prewarmed over {report['users']} users; {report['rounds']} interleaved rounds per client count; service "
          f"environment {report['service_env'] or 'as inherited'}; service stopped with SIGTERM "
          f"(exit {report['service_exit_code']}), {report['service_acked']} acknowledged adds, "
          f"lost after restart: {report['service_lost_after_restart']}")
    for row in rows:
        for sample in row["error_samples"]:
            print(f"error ({row['mode']}, {row['clients']} clients): {sample}")
    print()
    print("Goals:")
    mark = {True: "met", False: "NOT met", None: "not measured"}
    print(f"- service search p50 within 1.5x of in-process at 1 client: {mark[g['ratio_within_1_5x']]} "
          f"({g['search_p50_ratio_1_client']:.2f}x)")
    svc = {r["clients"]: r for r in rows if r["mode"] == "service"}
    detail = (f" ({svc[1]['turns_per_s']:.1f} -> {svc[8]['turns_per_s']:.1f} turns/s)"
              if g["throughput_grows_1_to_8"] is not None else "")
    print(f"- service throughput grows from 1 to 8 clients: {mark[g['throughput_grows_1_to_8']]}{detail}")
    print(f"- 0 errors, 0 memories lost: {mark[g['no_errors_no_loss']]} ({g['errors']} errors, {g['lost']} lost)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", default="1,8,32", help="concurrent clients, comma-separated")
    ap.add_argument("--turns", type=int, default=160, help="turns per client count in all, split over the clients")
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--prewarm", type=int, default=400, help="memories added (add_many) before the runs")
    ap.add_argument("--rounds", type=int, default=4, help="interleaved service/in-process rounds per client count")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--service-env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the service process only (repeatable), e.g. OMP_WAIT_POLICY=PASSIVE")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1 or args.turns < 1 or args.users < 1 or args.prewarm < 0 or args.rounds < 1:
        ap.error("--clients, --turns, --users and --rounds must be positive, --prewarm at least 0")
    if any("=" not in kv for kv in args.service_env):
        ap.error("--service-env takes KEY=VALUE")
    service_env = dict(kv.split("=", 1) for kv in args.service_env)
    plans = {c: schedule(args.turns, args.users, args.seed * 1000 + c) for c in counts}
    prewarm = prewarm_items(args.prewarm, args.users, args.seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        result = run(Path(tmp), counts, plans, prewarm, args.users, args.rounds, service_env)
    report = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(), "clients": counts, "turns": args.turns, "users": args.users,
        "prewarm": args.prewarm, "rounds": args.rounds, "seed": args.seed, "service_env": service_env,
        "seconds": time.perf_counter() - t0,
        **result,
    }
    report["goals"] = goals(report["rows"], report["service_lost_after_restart"])
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
