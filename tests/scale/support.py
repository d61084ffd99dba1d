"""What the scale tests share: one `milvus-lite server` per module (the tests/store helpers start it)
and a collection on it whose ids hippocampus assigns (as on a Milvus server), so that the id workers
(store/ids.py) and the leases (store/leases.py) are what the tests exercise."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hippocampus.store import MilvusStore
from hippocampus.testing import DeterministicEmbedder
from tests.store.test_store_servers import _LITE_MAIN, HOST, _free_port, _port_open, _server

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def lite_server(base: Path) -> Iterator[str]:
    """`milvus-lite server` on a free loopback port, stopped after the block; yields its URI."""
    port = _free_port()
    cmd = [sys.executable, "-c", _LITE_MAIN, "server", "--data-dir", str(base / "data"), "--host", HOST, "--port", str(port)]
    with _server(cmd, base / "server.log", lambda: _port_open(port), "milvus-lite server"):
        yield f"http://{HOST}:{port}"


def client_id_collection(uri: str, prefix: str = "scale", dim: int | None = None, model: str | None = None) -> str:
    """A new collection on `uri` whose ids hippocampus assigns (client ids), made once and closed; for the
    test embedder unless `dim` and `model` name another (the service's offline one)."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    emb = DeterministicEmbedder()
    MilvusStore(uri, dim or emb.dim, model or emb.model_name, collection=name, client_ids=True).close()
    return name


class Replica:
    """`python -m hippocampus --uri URI --collection NAME serve` in its own process group (its output in
    a log file): one replica of a service whose replicas share one Milvus server."""

    def __init__(self, uri: str, collection: str, port: int, log: Path, env: dict[str, str] | None = None):
        import os
        import subprocess

        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        cmd = [sys.executable, "-m", "hippocampus", "--uri", uri, "--collection", collection, "serve", "--port", str(port),
               "--no-mcp", "--log-level", "info"]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                                         env={**os.environ, **(env or {})}, start_new_session=True)

    def wait_healthy(self, timeout: float = 120.0) -> Replica:
        import time

        import httpx

        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"replica did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL for the process group, as a crash would."""
        import os
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)

    def stop(self) -> None:
        import os
        import signal
        import subprocess

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
