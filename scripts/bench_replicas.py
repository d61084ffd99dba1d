#!/usr/bin/env python
"""Several `hippocampus serve` replicas on one Milvus (a `milvus-lite server`) under the chat-hook mix.

    python scripts/bench_replicas.py                       # replicas 1,2,3 x clients 1,4,16; ~3 min here
    python scripts/bench_replicas.py --replicas 1,3 --clients 4,16 --turns 120 --json replicas.json

The mix is scripts/bench_service.py's (one `search` of the user's question and one `add` of the turn,
infer=False, ~40% Chinese, over `--users` users); each client is a thread with its own `Client`,
clients spread round-robin over the replicas. Every replica runs the offline embedder and rules
provider; the collection's ids are assigned by hippocampus (as on a Milvus server), so each replica
holds an id worker lease (store/leases.py). The store gets `--prewarm` memories first (add_many,
untimed) and every replica a short untimed warm-up. turns/s = turns / wall time; p50/p99 are per turn
(search + add) in the client thread. lost: acknowledged ids not readable afterwards (must be 0);
dup: repeated ids in the whole collection (must be 0).

Everything (the Milvus server, the replicas, the clients) shares this machine's cores: with 2 cores
the replicas compete with each other and with the embedder, so the table shows the overhead of
replicas more than their gain. docs/scale.md models what separate machines give.

    python scripts/bench_replicas.py --check --uri http://127.0.0.1:19530   # the replica harness on any Milvus

`--check` runs the checks of tests/scale/test_replicas.py (tests/scale/harness.py) instead of the
table, on a new collection that three replicas started at the same moment make themselves: every
replica asked to consolidate 24 users' duplicate pairs at once under a load of adds, updates and
deletes, then one replica SIGKILLed mid-consolidation and restarted. It prints the figures (merges
reported, acknowledged writes lost, repeated ids, double merges, history problems, seconds) and exits
non-zero unless all are 0. Without `--uri` it starts a `milvus-lite server` of its own; with one it
is how the harness runs on a Milvus 2.3 standalone, which CI's budget does not fit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

import bench_service as B  # noqa: E402 - the mix, percentiles and loss check

LEASE_ENV = {"HIPPOCAMPUS_EMBEDDING_PROVIDER": "offline", "HIPPOCAMPUS_LLM_PROVIDER": "offline"}


def run(counts_r: list[int], counts_c: list[int], turns: int, users: int, prewarm: int, seed: int) -> list[dict[str, Any]]:
    from hippocampus import Client
    from hippocampus.embeddings.offline import MODEL_NAME, OfflineEmbedder
    from hippocampus.store import MilvusStore
    from tests.scale.support import Replica, client_id_collection, lite_server
    from tests.service_support import free_port

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp:
        base = Path(tmp)
        os.environ["HIPPOCAMPUS_HOME"] = str(base / "home")
        with lite_server(base) as uri:
            collection = client_id_collection(uri, "bench", OfflineEmbedder().dim, MODEL_NAME)
            replicas = [Replica(uri, collection, free_port(), base / f"replica{n}.log", env=LEASE_ENV) for n in range(max(counts_r))]
            try:
                for r in replicas:
                    r.wait_healthy(180)
                with Client(replicas[0].url, timeout=300) as c0:
                    c0.add_many(B.prewarm_items(prewarm, users, seed))
                for r in replicas:
                    with Client(r.url, timeout=300) as c:
                        B.warm_up(c, users)
                for n_rep in counts_r:
                    for n_cli in counts_c:
                        urls = [r.url for r in replicas[:n_rep]]
                        pick = {"n": 0}
                        lock = threading.Lock()

                        def open_handle() -> Any:
                            with lock:
                                url = urls[pick["n"] % len(urls)]
                                pick["n"] += 1
                            return Client(url, timeout=300)

                        reader = Client(urls[0], timeout=300)
                        side = B.Side(f"{n_rep}r", open_handle, lambda h: h.close(), reader)
                        plan = B.schedule(turns, users, seed + 101 * n_rep + n_cli)
                        B.run_mix(side, n_cli, plan)
                        per_turn = [s + a for s, a in zip(side.search, side.add)]
                        row = side.row(n_cli)
                        row.update(replicas=n_rep, turn_p50_ms=B.pct(per_turn, 50), turn_p99_ms=B.pct(per_turn, 99))
                        reader.close()
                        rows.append(row)
                        print(f"{n_rep} replicas x {n_cli:>2} clients: {row['turns_per_s']:.1f} turns/s, "
                              f"p50 {row['turn_p50_ms']:.0f} ms, p99 {row['turn_p99_ms']:.0f} ms, errors {row['errors']}, "
                              f"lost {row['lost']}", flush=True)
                store = MilvusStore(uri, OfflineEmbedder().dim, MODEL_NAME, collection=collection)
                try:
                    ids = [int(r["id"]) for page in store.iterate("", ["id"]) for r in page]
                    holders = store.leases.holders()
                finally:
                    store.close()
                for row in rows:
                    row["dup"] = len(ids) - len(set(ids))
                print(f"collection: {len(ids)} rows, {len(ids) - len(set(ids))} repeated ids; "
                      f"id workers held: {sorted(h['name'] for h in holders if h['group'] == 'workers')}")
            finally:
                for r in replicas:
                    r.stop()
    return rows


def check(uri: str | None, pairs: int, kill_pairs: int, lease_ttl: float) -> dict[str, Any]:
    """The replica harness (tests/scale/harness.py) on `uri` (None: a milvus-lite server of its own); its figures."""
    import uuid
    from contextlib import nullcontext

    from tests.scale.harness import Cluster, consolidate, double_merges, killed_mid_run, overlapping_runs, store_figures
    from tests.scale.support import lite_server
    from tests.service_support import free_port

    with tempfile.TemporaryDirectory(prefix="check-replicas-") as tmp:
        base = Path(tmp)
        os.environ["HIPPOCAMPUS_HOME"] = str(base / "home")
        with (nullcontext(uri) if uri else lite_server(base)) as where:
            c = Cluster(where, f"check_{uuid.uuid4().hex[:8]}", base, free_port, env={"HIPPOCAMPUS_LEASE_TTL_S": str(lease_ttl)})
            try:
                out: dict[str, Any] = {"uri": where, "collection": c.collection, "start_s": round(c.start_all(3, 600), 1)}
                assert c.store is not None
                out["engine"] = f"{c.store.capabilities.engine} {c.store.capabilities.version}"
                print(f"3 replicas started together on a fresh collection: serving after {out['start_s']} s", flush=True)
                first = overlapping_runs(c, pairs)
                if first["lease_lost"]:  # a run stopped by its fencing check: one more run finishes what it left
                    first["merged_reported"] += consolidate(c.replicas[1])["merged"]
                out.update(merged_reported=first["merged_reported"], pairs=pairs, consolidate_s=first["consolidate_s"],
                           runs_lease_lost=first["lease_lost"], double_merges=double_merges(c, first["pairs"]))
                print(f"consolidate at once: {first['merged_reported']} merges reported for {pairs} pairs in {first['consolidate_s']} s", flush=True)
                second = killed_mid_run(c, kill_pairs)
                out.update(killed_mid_run=second["killed_mid_run"], merged_after_kill=second["merged_after"], recover_s=second["recover_s"],
                           double_merges_after_kill=double_merges(c, second["pairs"]))
                figures = store_figures(c)
                report = figures.pop("history")
                out.update(figures, history=report.summary(), history_problems=len(report.problems))
            finally:
                c.stop()
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    print("\n| replicas | clients | turns/s | turn p50 ms | turn p99 ms | errors | lost | dup |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['replicas']} | {r['clients']} | {r['turns_per_s']:.1f} | {r['turn_p50_ms']:.0f} | {r['turn_p99_ms']:.0f} "
              f"| {r['errors']} | {r['lost']} | {r['dup']} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", default="1,2,3")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--turns", type=int, default=64, help="turns per cell (split over the clients)")
    ap.add_argument("--users", type=int, default=40)
    ap.add_argument("--prewarm", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--check", action="store_true", help="run the replica harness's checks instead of the table")
    ap.add_argument("--uri", default=None, help="with --check: a Milvus server to run on (default: a milvus-lite server)")
    ap.add_argument("--pairs", type=int, default=24, help="with --check: duplicate pairs consolidated at once")
    ap.add_argument("--kill-pairs", type=int, default=8, help="with --check: pairs of the SIGKILL round")
    ap.add_argument("--lease-ttl", type=float, default=15.0,
                    help="with --check: HIPPOCAMPUS_LEASE_TTL_S of the replicas (short, so that a killed one's lapses soon)")
    args = ap.parse_args(argv)
    started = time.time()
    if args.check:
        out = check(args.uri, args.pairs, args.kill_pairs, args.lease_ttl)
        bad = (out["merged_reported"] != out["pairs"] or out["double_merges"] or out["double_merges_after_kill"] or out["lost"]
               or out["updates_lost"] or out["dup_ids"] or out["history_problems"])
        print(f"\n{out['engine']} at {out['uri']}: {out['merged_reported']} merges reported for {out['pairs']} pairs; "
              f"lost {len(out['lost'])}, repeated ids {out['dup_ids']}, double merges "
              f"{len(out['double_merges']) + len(out['double_merges_after_kill'])}, updates lost {len(out['updates_lost'])}; "
              f"killed mid-run {out['killed_mid_run']}, merged after {out['merged_after_kill']}; runs stopped by a lost lease "
              f"{out['runs_lease_lost']}; start {out['start_s']} s, consolidate {out['consolidate_s']} s, recover {out['recover_s']} s\n"
              f"{out['history']}\n"
              f"{os.cpu_count()} cores; {time.time() - started:.0f} s in all")
        if args.json:
            args.json.write_text(json.dumps(out, indent=2, default=str))
        return 1 if bad else 0
    rows = run([int(x) for x in args.replicas.split(",")], [int(x) for x in args.clients.split(",")], args.turns,
               args.users, args.prewarm, args.seed)
    print_table(rows)
    print(f"\n{os.cpu_count()} cores; {time.time() - started:.0f} s in all")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "cores": os.cpu_count()}, indent=2, default=str))
    return 0 if all(r["lost"] == 0 and r["dup"] == 0 and r["errors"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
