"""What the command's process sets up first (cli/startup.py) and the Client's plain-http transport: each
keeps something unloaded or unmade that a command does not use, and gives the real thing when asked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hippocampus.remote.client import Client, _verify

HTTPX_CLI = r"""
import sys
from hippocampus.cli import startup
assert startup.defer("httpx._main", ("main",))
import httpx
assert "pygments" not in sys.modules and "httpx._main" in sys.modules
assert httpx.Client and httpx.get  # the library itself is whole
import httpx._main
assert "pygments" not in sys.modules  # still the stand-in
assert httpx.main is httpx._main.main and "pygments" not in sys.modules  # a forwarder to the real one
helper = httpx._main.print_help  # any other attribute: the real module, loaded now
assert "pygments" in sys.modules and type(sys.modules["httpx._main"]).__name__ == "module"
assert helper is sys.modules["httpx._main"].print_help and httpx._main.main.name == "main"  # the real click command
print("ok")
"""


REQUESTS = r"""
import sys
from hippocampus.cli import startup
assert startup.defer("requests")
import requests
assert "urllib3" not in sys.modules and type(requests).__name__ == "_Deferred"
try:
    raise requests.exceptions.ConnectionError("down")  # an attribute: the real requests, loaded now
except (requests.exceptions.RequestException, RuntimeError) as exc:
    assert str(exc) == "down"
real = sys.modules["requests"]
assert "urllib3" in sys.modules and type(real).__name__ == "module" and real is not requests
import requests as again
assert again is real and requests.get is real.get
print("ok")
"""

SUBMODULE_FIRST = r"""
import sys
from hippocampus.cli import startup
assert startup.defer("requests")
import requests
import requests.adapters  # a submodule first: the real package, and its own module (never a second copy)
real = sys.modules["requests"]
assert type(real).__name__ == "module" and sys.modules["requests.adapters"] is real.adapters
assert real.adapters.__spec__.name == "requests.adapters" and real.adapters.HTTPAdapter
print("ok")
"""


@pytest.mark.parametrize("code", [HTTPX_CLI, REQUESTS, SUBMODULE_FIRST], ids=["httpx-cli", "requests", "submodule-first"])
def test_a_deferred_module_loads_when_used(code: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_nothing_is_deferred_that_is_imported_already() -> None:
    import httpx  # noqa: F401 - imported by this test process already

    from hippocampus.cli import startup

    assert startup.defer("httpx._main") is False


def test_a_plain_http_client_makes_no_tls_context_and_an_https_one_verifies() -> None:
    assert _verify("http://127.0.0.1:8765") is False and _verify("HTTP://host") is False
    assert _verify("https://memory.example.com") is True
    import ssl

    with Client("https://memory.example.com") as client:  # nothing is sent: the transport as made
        context = client._http._transport._pool._ssl_context
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
