"""Does a huge unauthenticated body cost the server memory? Starts `hippocampus serve` (a temporary
store, a strong operator key, a free loopback port), sends 100 MB bodies without a key (one, then
three at once; announced by Content-Length and chunked; to REST, a UI form and /mcp), streamed
piece by piece so this script stays small, and compares the server's memory before and after.

    python scripts/probe_body_limit.py [--mb 100] [--concurrent 3] [--limit-mib 10]
    python scripts/probe_body_limit.py --load [--concurrent 8] [--limit-mib 100]

With --load (issue 42) the attacks hold a key or need none, and aim at memory and connections rather
than the body cap: N searches at once whose `in` list holds 1.9 million items (3.8 MB), N add_many
bodies of 3.8 MB, 60 connections each holding an unfinished 4 MiB body, and 1,100 connections that never
finish their request head, while /healthz is asked whether the service still answers.

Prints each request's status and how much of its body the server let through before answering,
then RSS before, RSS after, the peak during (VmHWM, reset after the baseline where Linux allows)
and the growth; exits 1 when the growth reaches --limit-mib. RSS comes from psutil when it is
installed, else /proc/PID/status.
"""

from __future__ import annotations

import argparse
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PIECE = 64 * 1024
START_GUARD_S = 180
ANSWER_GUARD_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mib(pid: int) -> float:
    """Resident memory of the server process, in MiB."""
    try:
        import psutil  # noqa: PLC0415 - optional
        return psutil.Process(pid).memory_info().rss / 2**20
    except ImportError:
        kib = status_kib(pid, "VmRSS")
        if kib is None:
            raise SystemExit("cannot read the server's memory: install psutil or run on Linux") from None
        return kib / 1024


def reset_peak(pid: int) -> bool:
    """Linux: writing 5 to clear_refs resets VmHWM, so the peak measured is the probe's own."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def pieces(total: int) -> Iterator[bytes]:
    """The body, generated: a JSON array of ones, never held whole."""
    sent = 0
    piece = b"1," * (PIECE // 2)
    yield b"["
    sent += 1
    while sent < total - 1:
        chunk = piece[: min(PIECE, total - 1 - sent)]
        sent += len(chunk)
        yield chunk
    yield b"]"


def probe(port: int, path: str, headers: dict[str, str], total: int, chunked: bool) -> tuple[int, int]:
    """Send the request at full speed until the server answers; (status or 0, body bytes sent)."""
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}"
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    lead = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{framing}\r\n{head}\r\n".encode()
    sent, answer = 0, b""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_GUARD_S) as sock:
        sock.sendall(lead)
        try:
            for chunk in pieces(total):
                if select.select([sock], [], [], 0)[0]:
                    break  # the server answered (or closed): stop sending
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk)
                sent += len(chunk)
            else:
                if chunked:
                    sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server closed the connection: it answered, or it gave up
        try:
            while b"\r\n" not in answer:
                data = sock.recv(4096)
                if not data:
                    break
                answer += data
        except OSError:
            pass
    try:
        return int(answer.split(b" ", 2)[1]), sent
    except (IndexError, ValueError):
        return 0, sent


def start(store: Path, port: int, key: str, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "hippocampus", "--uri", str(store / "memories.db"), "serve", "--port", str(port),
               "--log-level", "warning"]
    env = {**os.environ, "HIPPOCAMPUS_API_KEY": key}
    env.pop("HIPPOCAMPUS_API_KEYS", None)
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    import httpx  # noqa: PLC0415

    deadline = time.monotonic() + START_GUARD_S
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise SystemExit(f"the service did not start:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def warm_up(port: int, key: str) -> None:
    """One real request of each kind first, so that lazy imports do not count as growth."""
    import httpx  # noqa: PLC0415

    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, timeout=120) as http:
        http.post("/v1/memories", json={"messages": "warm", "user_id": "probe"})  # 401
        auth = {"Authorization": f"Bearer {key}"}
        http.post("/v1/memories", json={"messages": "I like tea", "user_id": "probe"}, headers=auth)
        http.post("/v1/search", json={"query": "tea", "user_id": "probe"}, headers=auth)
        http.get("/ui/login")


def in_list(route: str, items: int) -> bytes:
    """A body of `items` zeros: a search's `in` filter, or an add_many's items (parsed, then refused)."""
    zeros = b"0," * (items - 1) + b"0"
    if route == "/v1/search":
        return b'{"query": "x", "user_id": "probe", "filters": {"n": {"in": [' + zeros + b"]}}}"
    return b'{"items": [' + zeros + b"]}"


def at_once(count: int, send: Callable[[], str]) -> list[str]:
    """`send` from `count` threads at once; their results in order of finishing."""
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(send())) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def answers(port: int) -> str:
    """Whether the service answers /healthz now (within 10 s)."""
    import httpx  # noqa: PLC0415

    try:
        return str(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code)
    except httpx.HTTPError as exc:
        return type(exc).__name__


def hold(port: int, count: int, lead: bytes, body: bytes = b"") -> list[socket.socket]:
    """`count` connections that send `lead` (and `body`) and then wait; those the server refused are closed."""
    held = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(lead + body)
            held.append(sock)
        except OSError:
            break
    return held


def load_round(port: int, key: str, concurrent: int) -> list[tuple[str, str, str]]:
    """The --load attacks: (what, statuses, /healthz meanwhile) per row."""
    import httpx  # noqa: PLC0415

    rows = []
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for route in ("/v1/search", "/v1/memories/batch"):
        body = in_list(route, 1_900_000)

        def send(route: str = route, body: bytes = body) -> str:
            try:
                return str(httpx.post(f"http://127.0.0.1:{port}{route}", content=body, headers=auth, timeout=300).status_code)
            except httpx.HTTPError as exc:
                return type(exc).__name__

        codes = at_once(concurrent, send)
        rows.append((f"{route} {len(body) / 1e6:.1f} MB x{concurrent}", ",".join(sorted(set(codes))), answers(port)))
    lead = (f"POST /v1/memories/batch HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {4 * 2**20}\r\n\r\n").encode()
    held = hold(port, 60, lead, b'{"items": [' + b"0," * (2**19))
    time.sleep(2)
    rows.append(("60 x unfinished 4 MiB body (1 MiB sent)", f"{len(held)} open", answers(port)))
    for sock in held:
        sock.close()
    held = hold(port, 1100, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
    time.sleep(2)
    still = sum(1 for sock in held if not _closed_now(sock))
    rows.append(("1,100 x unfinished request head", f"{still} open", answers(port)))
    for sock in held:
        sock.close()
    return rows


def _closed_now(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="body size in MB (10**6 bytes)")
    parser.add_argument("--concurrent", type=int, default=3, help="bodies sent at once in the second round")
    parser.add_argument("--limit-mib", type=float, default=None, help="fail when the server grows this much "
                        "(default 10, with --load 100)")
    parser.add_argument("--load", action="store_true", help="the keyed and slow-connection attacks (issue 42)")
    args = parser.parse_args()
    args.limit_mib = args.limit_mib if args.limit_mib is not None else (100.0 if args.load else 10.0)
    if args.load:
        return main_load(args.concurrent if args.concurrent != 3 else 8, args.limit_mib)
    total = args.mb * 10**6
    key = secrets.token_urlsafe(32)
    json_type = {"Content-Type": "application/json"}
    cases = [("REST, Content-Length", "/v1/memories", json_type, False),
             ("REST, chunked", "/v1/memories", json_type, True),
             ("UI form", "/ui/users/alice/memories", {"Content-Type": "application/x-www-form-urlencoded"}, False),
             ("MCP", "/mcp", {**json_type, "Accept": "application/json, text/event-stream"}, False)]
    with tempfile.TemporaryDirectory(prefix="probe-body-") as tmp:
        port = free_port()
        proc = start(Path(tmp), port, key, Path(tmp) / "serve.log")
        try:
            warm_up(port, key)
            before = rss_mib(proc.pid)
            peak_reset = reset_peak(proc.pid)
            rows = []
            for name, path, headers, chunked in cases:
                status, sent = probe(port, path, headers, total, chunked)
                rows.append((f"{name} x1", str(status), f"{sent / 2**20:.2f}"))
            results: list[tuple[int, int]] = []
            threads = [threading.Thread(target=lambda: results.append(probe(port, "/v1/memories", json_type, total, False)))
                       for _ in range(args.concurrent)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rows.append((f"REST, Content-Length x{args.concurrent} at once", ",".join(str(s) for s, _ in results),
                         f"{sum(n for _, n in results) / 2**20:.2f}"))
            after = rss_mib(proc.pid)
            peak_kib = status_kib(proc.pid, "VmHWM") if peak_reset else None
        finally:
            stop(proc)
    peak = peak_kib / 1024 if peak_kib is not None else None
    growth = max(after, peak or 0.0) - before
    print(f"{args.mb} MB unauthenticated bodies against `hippocampus serve` (keys set), pid {proc.pid}")
    print(f"{'request':<38} {'status':>12} {'MiB sent':>9}")
    for name, status, sent in rows:
        print(f"{name:<38} {status:>12} {sent:>9}")
    print(f"RSS before {before:.1f} MiB, after {after:.1f} MiB, peak during "
          f"{f'{peak:.1f} MiB' if peak is not None else 'unknown'}; growth {growth:.1f} MiB (limit {args.limit_mib:g})")
    return 0 if growth < args.limit_mib else 1


def main_load(concurrent: int, limit_mib: float) -> int:
    """--load: the server's memory and reachability under the keyed and slow-connection attacks."""
    key = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="probe-load-") as tmp:
        port = free_port()
        proc = start(Path(tmp), port, key, Path(tmp) / "serve.log")
        try:
            warm_up(port, key)
            before = rss_mib(proc.pid)
            peak_reset = reset_peak(proc.pid)
            rows = load_round(port, key, concurrent)
            after = rss_mib(proc.pid)
            peak_kib = status_kib(proc.pid, "VmHWM") if peak_reset else None
        finally:
            stop(proc)
    peak = peak_kib / 1024 if peak_kib is not None else None
    growth = max(after, peak or 0.0) - before
    print(f"load against `hippocampus serve` (keys set), pid {proc.pid}")
    print(f"{'attack':<42} {'answers':>14} {'/healthz':>9}")
    for name, status, health in rows:
        print(f"{name:<42} {status:>14} {health:>9}")
    print(f"RSS before {before:.1f} MiB, after {after:.1f} MiB, peak during "
          f"{f'{peak:.1f} MiB' if peak is not None else 'unknown'}; growth {growth:.1f} MiB (limit {limit_mib:g})")
    return 0 if growth < limit_mib else 1


if __name__ == "__main__":
    sys.exit(main())
