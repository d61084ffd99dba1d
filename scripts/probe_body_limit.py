"""Does a huge unauthenticated body cost the server memory? Starts `hippocampus serve` (a temporary
store, a strong operator key, a free loopback port), sends 100 MB bodies without a key (one, then
three at once; announced by Content-Length and chunked; to REST, a UI form and /mcp), streamed
piece by piece so this script stays small, and compares the server's memory before and after.

    python scripts/probe_body_limit.py [--mb 100] [--concurrent 3] [--limit-mib 10]

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
from pathlib import Path
from typing import Iterator, Optional

PIECE = 64 * 1024
START_GUARD_S = 180
ANSWER_GUARD_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kib(pid: int, field: str) -> Optional[int]:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="body size in MB (10**6 bytes)")
    parser.add_argument("--concurrent", type=int, default=3, help="bodies sent at once in the second round")
    parser.add_argument("--limit-mib", type=float, default=10.0, help="fail when the server grows this much")
    args = parser.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
