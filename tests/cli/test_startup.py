"""What the command's process sets up first (cli/startup.py) and the Client's plain-http transport: each
keeps something unloaded or unmade that a command does not use, and gives the real thing when asked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hippocampus.remote.client import Client, _verify

HTTPX_CLI = r"""
import sys
from hippocampus.cli import startup
assert startup.defer_httpx_cli()
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


def test_httpx_loads_without_its_command_line_which_loads_when_used() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", HTTPX_CLI], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_a_plain_http_client_makes_no_tls_context_and_an_https_one_verifies() -> None:
    assert _verify("http://127.0.0.1:8765") is False and _verify("HTTP://host") is False
    assert _verify("https://memory.example.com") is True
    import ssl

    with Client("https://memory.example.com") as client:  # nothing is sent: the transport as made
        context = client._http._transport._pool._ssl_context
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
