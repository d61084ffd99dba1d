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
    args = ap.parse_args(argv)
    started = time.time()
    rows = run([int(x) for x in args.replicas.split(",")], [int(x) for x in args.clients.split(",")], args.turns,
               args.users, args.prewarm, args.seed)
    print_table(rows)
    print(f"\n{os.cpu_count()} cores; {time.time() - started:.0f} s in all")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "cores": os.cpu_count()}, indent=2, default=str))
    return 0 if all(r["lost"] == 0 and r["dup"] == 0 and r["errors"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
