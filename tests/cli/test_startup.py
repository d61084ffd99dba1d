"""The Client's plain-http transport makes no TLS context; and the command's process imports the real
modules (no stand-in in sys.modules: the `hippocampus` command once put some there, issue 56)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hippocampus.remote.client import Client
from hippocampus.remote.transport import _verify

NO_STAND_INS = r"""
import sys, types
sys.argv = ["hippocampus", "--help"]
from hippocampus.cli.app import main
try:
    main()
except SystemExit:
    pass
odd = sorted(n for n, m in sys.modules.items() if m is not None and type(m) is not types.ModuleType
             and n.split(".")[0] in ("pandas", "requests", "httpx", "numpy"))
assert odd == [] and not any(type(f).__module__.startswith("hippocampus") for f in sys.meta_path), (odd, sys.meta_path)
import httpx
assert type(sys.modules["httpx"]) is types.ModuleType
print("ok")
"""


def test_the_command_puts_no_stand_in_module_in_sys_modules() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", NO_STAND_INS], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_a_plain_http_client_makes_no_tls_context_and_an_https_one_verifies() -> None:
    assert _verify("http://127.0.0.1:8765") is False and _verify("HTTP://host") is False
    assert _verify("https://memory.example.com") is True
    import ssl

    with Client("https://memory.example.com") as client:  # nothing is sent: the transport as made
        context = client._http._transport._pool._ssl_context
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
