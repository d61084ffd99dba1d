"""The TypeScript client (clients/typescript) against a real `hippocampus serve` with API keys, and its
generated files against the current app.

The package is installed with `npm ci` only when its node_modules is missing, type-checked and built by
`tsc`, then its tests run under Node's own runner (`node --test`), given the service's URL and keys in the
environment. The drift check regenerates openapi.json (hippocampus/server/openapi.py) and src/schema.d.ts
(the pinned openapi-typescript) into a temporary folder and compares them with the committed files.
Skipped only where `node` or `npm` is missing (.ci/run installs Debian's nodejs and npm).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.service_support import ServiceProcess, free_port

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
NODE, NPM = shutil.which("node"), shutil.which("npm")
TESTS = ("wire.test.js", "split.test.js", "errors.test.js", "verbs.test.js")
USERS_A, USERS_B = ("ts-alice", "ts-alina"), ("ts-bob",)
STEP_GUARD_S = 300  # turns a hang into a failure; never asserts speed

needs_node = pytest.mark.skipif(NODE is None or NPM is None,
                                reason="node and npm are not installed: .ci/run installs Debian's nodejs and npm")


def _run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=PACKAGE, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=STEP_GUARD_S, check=False)


def _ok(done: subprocess.CompletedProcess[str], what: str) -> None:
    assert done.returncode == 0, f"{what} failed ({done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"


def test_every_verb_of_the_python_client_is_a_method() -> None:
    """hippocampus/contract/verbs.py's Client verbs, each in camelCase, are methods of the TypeScript Client."""
    from hippocampus.contract.verbs import VERBS

    source = (PACKAGE / "src" / "index.ts").read_text(encoding="utf-8")
    methods = set(re.findall(r"^  async \*?(\w+)\(", source, flags=re.M))
    wanted = {re.sub(r"_(\w)", lambda m: m.group(1).upper(), v.client.name) for v in VERBS if v.client.name}
    assert wanted - methods == set(), "verbs of the Python Client missing from clients/typescript/src/index.ts"


def test_the_add_many_cap_is_the_services() -> None:
    """The TypeScript client splits addMany at the service's own cap (contract/wire.MAX_ADD_MANY): a larger
    constant there would send requests the service refuses, a smaller one more requests than needed."""
    from hippocampus.contract import wire

    source = (PACKAGE / "src" / "index.ts").read_text(encoding="utf-8")
    found = re.findall(r"^export const MAX_ADD_MANY = ([\d_]+);$", source, flags=re.M)
    assert [int(n) for n in found] == [wire.MAX_ADD_MANY], "clients/typescript/src/index.ts: MAX_ADD_MANY is not wire.MAX_ADD_MANY"


@pytest.fixture(scope="module")
def built() -> Path:
    """The package installed (npm ci, only without node_modules), type-checked and built into dist/."""
    if not (PACKAGE / "node_modules" / ".package-lock.json").exists():
        _ok(_run([NPM, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"]), "npm ci")
    _ok(_run([NPM, "run", "--silent", "build"]), "tsc (type-check and build)")
    return PACKAGE / "dist"


@needs_node
def test_the_client_against_a_real_service(built: Path, tmp_path: Path) -> None:
    """Every verb, the keys and the 404 rule between tenants, the error classes: node --test test/*.test.js."""
    key_a, key_b, operator = (secrets.token_urlsafe(32) for _ in range(3))
    keys = f"{key_a}={','.join(USERS_A)};{key_b}={','.join(USERS_B)};{operator}=*"
    service = ServiceProcess(str(tmp_path / "memories.db"), free_port(), tmp_path / "serve.log",
                             env={"HIPPOCAMPUS_API_KEYS": keys, "HIPPOCAMPUS_API_KEY": "", "HIPPOCAMPUS_KEYS_FILE": ""})
    try:
        done = _run([NODE, "--test", "--test-reporter=tap", *(f"test/{name}" for name in TESTS)], env={
            "HIPPOCAMPUS_TEST_URL": service.url, "HIPPOCAMPUS_TEST_KEY_OPERATOR": operator,
            "HIPPOCAMPUS_TEST_KEY_A": key_a, "HIPPOCAMPUS_TEST_USERS_A": ",".join(USERS_A),
            "HIPPOCAMPUS_TEST_KEY_B": key_b, "HIPPOCAMPUS_TEST_USERS_B": ",".join(USERS_B),
            "HIPPOCAMPUS_API_KEY": "", "HIPPOCAMPUS_SERVER": ""})
        _ok(done, "node --test")
        assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout, done.stdout[-3000:]
        served = httpx.get(service.url + "/openapi.json", headers={"Authorization": f"Bearer {operator}"}, timeout=30)
        committed = json.loads((PACKAGE / "openapi.json").read_text(encoding="utf-8"))
        assert served.json() == committed, "clients/typescript/openapi.json is not what the service serves: run npm run generate"
    finally:
        service.stop()


@needs_node
def test_generated_files_match_the_app(built: Path, tmp_path: Path) -> None:
    """openapi.json and src/schema.d.ts, regenerated from the current app by the pinned generator, equal the
    committed ones."""
    _ok(_run(["sh", "scripts/generate.sh"], env={"PYTHON": sys.executable, "OUT_DIR": str(tmp_path)}), "npm run generate")
    for name in ("openapi.json", "src/schema.d.ts"):
        fresh = (tmp_path / name).read_text(encoding="utf-8")
        assert fresh == (PACKAGE / name).read_text(encoding="utf-8"), (
            f"clients/typescript/{name} is out of date with the app: run `npm run generate` in clients/typescript "
            "and commit the result")
