"""A simulated year of one user's memory: what a person would check after months of chat.

    python scripts/eval.py lifecycle                        # 2,000 turns over 365 days, table + PNG
    python scripts/eval.py lifecycle --turns 300 --days 90  # smaller
    python scripts/eval.py lifecycle --json year.json --png docs/lifecycle_year.png

A scripted user (English and Chinese) states standing facts on the first days (name, birthday,
preferences, home city), moves city half-way through, asks for dated todos, and otherwise tells
the assistant about ordinary days; greetings, thanks and knowledge questions are mixed in. Every
turn goes through `add(infer=True)` (the offline rules decide) on a simulated clock
(`hippocampus.models.simulated_clock`). Each day the agent answers a few questions: it searches,
and when one of the three best hits holds the answer (the city before the move, the new one
after) it reports that memory as used (`mark_used`), the only thing that reinforces a memory. Every night the decay step runs; every `--consolidate-every` nights the full
consolidation (which ends with the decay step).

Printed: a month-by-month table (active, archived, core, forgotten so far, lines of the prompt
block) and the checks: names and standing preferences in core, the new city active and the facts
about the old one superseded (the episodes that said it stay, as what was said then), past todos
archived or forgotten, the prompt block within 20 lines, and no memory gone without a history
event. A check that fails is printed as FAIL and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hippocampus import Memory  # noqa: E402
from hippocampus.models import Category, HistoryAction, MemoryType, State, simulated_clock  # noqa: E402
from hippocampus.store import filters as F  # noqa: E402

USER = "lina"
START = datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc)
STANDING = ["My name is Lina Park", "My birthday is on 14 March", "I prefer green tea to coffee", "I love jazz, especially Coltrane"]
HOME, MOVED = "I live in Lisbon, near the river", "I moved to Porto last week, to a flat near the old town"
# (question, a word the answer needs): the agent's daily questions
QUESTIONS = [("what is my name?", "Lina"), ("what should I drink this afternoon?", "tea"), ("put on some music I like", "jazz"),
             ("when is my birthday?", "March"), ("where do I live now?", "Lisbon|Porto")]  # the city before / after the move
PLACES = ["the market", "the beach", "the museum", "a small bakery", "the library", "the park", "a concert", "the gym"]
FRIENDS = ["Ana", "Tomás", "Mia", "my sister", "Jonas", "Rita"]
DISHES = ["bacalhau", "a vegetable curry", "pasta with clams", "dumplings", "a lemon cake"]
EPISODES = ["I went to {place} with {friend} today", "I cooked {dish} for {friend} tonight", "{friend} and I talked about work at {place}",
            "今天和{friend}去了{place}", "I spent the evening reading at {place}"]
CHATTER = ["hi!", "thanks a lot", "haha", "what is the capital of Australia?", "你好", "谢谢", "how do I boil an egg?", "ok"]


@dataclass
class Month:
    month: int
    active: int = 0
    archived: int = 0
    core: int = 0
    forgotten: int = 0
    block_lines: int = 0


@dataclass
class Year:
    months: list[Month] = field(default_factory=list)
    turns: int = 0
    stored: int = 0
    uses: int = 0
    forgotten: int = 0
    consolidations: int = 0
    checks: dict[str, tuple[bool, str]] = field(default_factory=dict)
    seconds: float = 0.0


def script(turns: int, days: int, seed: int) -> list[tuple[int, str]]:
    """(day, text) for the whole simulation, in time order: standing facts first, the move half-way,
    a dated todo every ~3 weeks, and ordinary days with some chatter."""
    rnd = random.Random(seed)
    plan: list[tuple[int, str]] = [(0, t) for t in STANDING] + [(1, HOME), (days // 2, MOVED)]
    for day in range(5, days - 3, 21):
        due = (START + timedelta(days=day + 4)).date().isoformat()
        plan.append((day, f"Remind me to renew the gym card on {due}"))
    while len(plan) < turns:
        day = rnd.randrange(days)
        if rnd.random() < 0.2:
            plan.append((day, rnd.choice(CHATTER)))
        else:
            text = rnd.choice(EPISODES).format(place=rnd.choice(PLACES), friend=rnd.choice(FRIENDS), dish=rnd.choice(DISHES))
            plan.append((day, text))
    return sorted(plan[:turns], key=lambda x: x[0])


def snapshot(memory: Memory, month: int, now: int, forgotten: int) -> Month:
    row = Month(month=month, forgotten=forgotten)
    for record in memory.iter_all(USER):
        life = record.life
        row.core += life.category is Category.CORE
        row.archived += life.state is State.ARCHIVED
        row.active += life.state is State.ACTIVE
    row.block_lines = sum(1 for line in memory.context(USER, now=now).splitlines() if line.startswith("- "))
    return row


def simulate(memory: Memory, turns: int = 2000, days: int = 365, seed: int = 7, consolidate_every: int = 7,
             questions_per_day: int = 2, progress: Callable[[int, int], None] | None = None) -> Year:
    """Run the scripted year on `memory` (which should be empty for USER) and check the outcome."""
    started = time.perf_counter()
    year, rnd, clock = Year(), random.Random(seed + 1), [START.timestamp()]
    plan = script(turns, days, seed)
    with simulated_clock(lambda: clock[0]):
        by_day: dict[int, list[str]] = {}
        for day, text in plan:
            by_day.setdefault(day, []).append(text)
        for day in range(days):
            base = (START + timedelta(days=day)).timestamp()
            for i, text in enumerate(by_day.get(day, [])):
                clock[0] = base + 600 * i
                year.turns += 1
                year.stored += bool(memory.add(text, user_id=USER, chat_id=f"day{day}", infer=True).stored)
            for i, (question, needs) in enumerate(rnd.sample(QUESTIONS, k=min(questions_per_day, len(QUESTIONS)))):
                clock[0] = base + 8 * 3600 + 3 * 3600 * i
                if "|" in needs:
                    needs = needs.split("|")[int(day >= days // 2)]
                hits = memory.search(question, user_id=USER, limit=3).all
                used = next((h for h in hits if needs.lower() in h.text.lower()), None)  # the hit that held the answer
                if used is not None:
                    memory.mark_used([used.id], user_id=USER)
                    year.uses += 1
            clock[0] = base + 23 * 3600
            if consolidate_every and (day + 1) % consolidate_every == 0:
                year.forgotten += memory.consolidate(USER).forgotten
                year.consolidations += 1
            else:
                year.forgotten += memory.decay(USER).forgotten
            if (day + 1) % 30 == 0 or day == days - 1:
                year.months.append(snapshot(memory, len(year.months) + 1, int(clock[0]), year.forgotten))
            if progress is not None:
                progress(day + 1, days)
        year.checks = check(memory, int(clock[0]))
    year.seconds = round(time.perf_counter() - started, 1)
    return year


def check(memory: Memory, now: int) -> dict[str, tuple[bool, str]]:
    """What a person would look at after the year."""
    records = list(memory.iter_all(USER))
    core = [r.text for r in records if r.life.category is Category.CORE]
    out: dict[str, tuple[bool, str]] = {}
    for word in ("Lina", "tea", "jazz"):
        found = [t for t in core if word.lower() in t.lower()]
        out[f"'{word}' in core"] = (bool(found), found[0] if found else "not in core")
    porto = [r for r in records if "Porto" in r.text]
    out["new city active"] = (any(r.life.state is State.ACTIVE for r in porto), f"{len(porto)} memories mention Porto")
    facts = [r for r in records if r.memory_type is MemoryType.SEMANTIC]
    lisbon = [r for r in facts if "Lisbon" in r.text and r.life.state is State.ACTIVE and r.life.superseded_by is None]
    gone = [r for r in facts if "Lisbon" in r.text and r.life.superseded_by is not None]
    out["old city superseded"] = (not lisbon, f"{len(lisbon)} current facts say Lisbon: {lisbon[0].text!r}" if lisbon
                                  else f"{len(gone)} Lisbon facts superseded, none current")
    todos = [r for r in records if r.life.category is Category.TODO and r.life.expires_at and r.life.expires_at < now]
    open_past = [r for r in todos if r.life.state is State.ACTIVE]
    out["past todos archived"] = (not open_past, f"{len(todos)} past todos kept, {len(open_past)} still active")
    lines = sum(1 for line in memory.context(USER, now=now).splitlines() if line.startswith("- "))
    out["prompt block <= 20 lines"] = (lines <= 20, f"{lines} lines")
    events: dict[int, set[str]] = {}
    for event in memory.store.history(F.eq("user_id", USER)):
        events.setdefault(int(event["memory_id"]), set()).add(str(event["action"]))
    alive = {r.id for r in records}
    ends = {HistoryAction.DELETED.value, HistoryAction.FORGOTTEN.value, HistoryAction.MERGED.value}
    lost = [i for i, acts in events.items() if i not in alive and not acts & ends]
    out["nothing lost without history"] = (not lost, f"{len(events)} memories in history, {len(lost)} gone without an event")
    return out


def table(year: Year) -> str:
    lines = ["| month | active | archived | core | forgotten (so far) | prompt block lines |", "|---|---|---|---|---|---|"]
    lines += [f"| {m.month} | {m.active} | {m.archived} | {m.core} | {m.forgotten} | {m.block_lines} |" for m in year.months]
    lines += ["", f"{year.turns} turns, {year.stored} stored by the write decision, {year.uses} uses reported, "
              f"{year.consolidations} consolidations, {year.seconds} s", ""]
    lines += [f"- {'ok  ' if ok else 'FAIL'} {name}: {why}" for name, (ok, why) in year.checks.items()]
    return "\n".join(lines)


def plot(year: Year, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    months = [m.month for m in year.months]
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=120)
    for key, label in (("active", "active"), ("archived", "archived"), ("core", "core"), ("forgotten", "forgotten (so far)")):
        ax.plot(months, [getattr(m, key) for m in year.months], marker="o", label=label)
    ax.set_xlabel("month")
    ax.set_ylabel("memories")
    ax.set_title(f"A simulated year: {year.turns} turns, decay nightly")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=2000)
    p.add_argument("--days", type=int, default=365)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--consolidate-every", type=int, default=7, help="nights between full consolidations (0: decay only)")
    p.add_argument("--questions", type=int, default=2, help="questions the agent answers a day")
    p.add_argument("--json", type=Path, default=None, help="write the months and checks as JSON here")
    p.add_argument("--png", type=Path, default=None, help="plot the months here (matplotlib)")
    p.add_argument("--uri", default=None, help="a store path (default: a temporary milvus-lite store)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        with Memory(milvus_uri=args.uri or str(Path(tmp) / "year.db"), create_store_dir=True) as memory:
            memory.reset(USER)
            step = max(1, args.days // 12)
            year = simulate(memory, args.turns, args.days, args.seed, args.consolidate_every, args.questions,
                            progress=lambda d, n: print(f"  day {d}/{n}", file=sys.stderr) if d % step == 0 else None)
    print(table(year))
    if args.json:
        args.json.write_text(json.dumps({"months": [m.__dict__ for m in year.months], "checks": year.checks,
                                         "turns": year.turns, "stored": year.stored, "uses": year.uses,
                                         "seconds": year.seconds}, indent=1), encoding="utf-8")
    if args.png:
        print(f"plot: {plot(year, args.png)}")
    return 0 if all(ok for ok, _ in year.checks.values()) else 1
